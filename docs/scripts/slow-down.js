// Answers 503 for one path in three, to try a client's retry logic.
exports.requestHeaders = function (flow) {
  if (flow.request.url.indexOf("/upload") < 0) return;
  var n = (store.get("uploads") || 0) + 1;
  store.set("uploads", n);
  if (n % 3 === 0) {
    flow.respond(503, { "Retry-After": "1" }, "try again");
  }
};
