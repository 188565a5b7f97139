// Adds a header to every request to one API host, and tags the session.
exports.request = function (flow) {
  if (flow.request.url.indexOf("https://api.example.com/") === 0) {
    flow.request.headers.set("X-Debug", "1");
    flow.tag("X-Debug added");
  }
};
