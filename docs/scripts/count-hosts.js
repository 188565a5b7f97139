// Counts requests per host in the shared store and logs every hundredth session.
exports.done = function (s) {
  var counts = store.get("hosts") || {};
  counts[s.host] = (counts[s.host] || 0) + 1;
  store.set("hosts", counts);
  if (s.id % 100 === 0) log("requests per host:", counts);
};
exports.error = function (s) {
  log("session " + s.id + " failed at " + s.error_phase + ": " + s.error);
};
