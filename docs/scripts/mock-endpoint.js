// Answers one endpoint locally (nothing goes upstream) and marks the session.
exports.request = function (flow) {
  if (flow.request.method === "GET" && /\/api\/feature-flags$/.test(flow.request.url)) {
    flow.respond(200, { "Content-Type": "application/json" },
      JSON.stringify({ newCheckout: true, darkMode: false }));
    flow.mark("purple");
  }
};
