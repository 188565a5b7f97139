// Changes a JSON response on its way to the client: every price doubled.
exports.response = function (flow) {
  var type = flow.response.headers.get("Content-Type") || "";
  if (type.indexOf("json") < 0) return;
  var body = flow.response.json();
  (body.items || []).forEach(function (item) {
    if (typeof item.price === "number") item.price = item.price * 2;
  });
  flow.response.setJSON(body);
};
