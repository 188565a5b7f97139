// Changes WebSocket messages on the relay, before they are forwarded.
// - client → server: a chat message's text is tagged, "typing" notices are dropped;
// - server → client: JSON messages get "seen_by_proxy": true;
// - every message with "password" in it is logged (direction and session).
exports.websocketMessage = function (msg) {
  if (msg.opcode !== 1) return; // binary messages go on as they are

  if (msg.text.indexOf("password") >= 0) {
    log("ws", msg.session, msg.direction, "carries a password:", msg.url);
  }
  if (msg.direction === "to_server") {
    if (msg.text === '{"type":"typing"}') {
      msg.drop(); // the server never sees it
      return;
    }
    if (msg.text.charAt(0) === "{") {
      var v = msg.json;
      if (v.type === "chat" && typeof v.text === "string") {
        v.text = v.text + " [via Inspector]";
        msg.json = v;
      }
    }
    return;
  }
  if (msg.text.charAt(0) === "{") {
    try {
      var out = msg.json;
      out.seen_by_proxy = true;
      msg.json = out;
    } catch (e) {
      // not JSON after all: left as it is
    }
  }
};
