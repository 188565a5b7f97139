// Package script runs JavaScript addons (github.com/dop251/goja) at the engine's hook
// stages, in the style of mitmproxy's addons.
//
// # Files
//
// A Manager loads every *.js file of a folder (DATA_DIR/scripts) plus files named on the
// command line (--script FILE), and reloads a file when its modification time or size
// changes (polled every PollInterval, or at once with Reload). A file that fails to compile
// keeps no handlers; its error, with file:line, is in Status until the file is fixed.
//
// # Stages
//
// A script defines handlers either as exports (`exports.request = function (flow) {…}`,
// `module.exports = {response(flow) {…}}`) or as top-level functions of the same names:
//
//	requestHeaders(flow)   request head arrived; body not available (reading it throws)
//	request(flow)          request with its body (the engine's Request stage: buffered; up to MaxBody)
//	responseHeaders(flow)  response head arrived; body not available
//	response(flow)         response with its body
//	error(summary)         after a session ended with an error (asynchronous, read-only)
//	done(summary)          after every session ended (asynchronous, read-only)
//	websocketMessage(msg)  each WebSocket data message, both ways, in order per direction,
//	                       before it is forwarded; it may change or drop it (below)
//
// Scripts run in file name order at each stage. Each is the engine's stage of the same
// name (docs/hooks.md): the Manager takes the body stages (request, response) and the Done
// stage only while some script defines a handler for them, so without one bodies stream
// and nothing is buffered for scripts. error and done run on the Manager's own goroutine,
// queued from the engine's Done stage, so a script's budget never delays an exchange.
//
// # The flow object
//
//	flow.id                         the session id
//	flow.request.method / .url      read and assign
//	flow.request.headers            get(name), getAll(name), set(name, value), add, remove, has, toObject()
//	flow.request.text() / setText(s), json() / setJSON(v), bytes() / setBytes(uint8array)
//	flow.response.status            read and assign (response stages); headers and body as above
//	flow.respond(status, headers?, body?)   answer the request without sending it upstream
//	flow.drop()                     end the exchange: the client gets an error, nothing more is sent
//	flow.mark(colour)               set the session's mark (red, orange, yellow, green, blue, purple, grey)
//	flow.tag(text)                  add a note to the session's comment
//	console.log(...), log(...)      lines in the Manager's log (Log), with the file name
//	store.get(key) / store.set(key, value) / store.delete(key)   values kept across calls and reloads
//
// # The message object (websocketMessage)
//
//	msg.session, msg.url             the session id and the upgrade request's URL
//	msg.direction                    "to_server" or "to_client"; msg.from_client is the same as a bool
//	msg.opcode                       1 (text) or 2 (binary); assignable (1 or 2)
//	msg.text                         the payload as a string; assign to replace it
//	msg.bytes                        the payload as a Uint8Array; assign a Uint8Array, ArrayBuffer or string
//	msg.json                         the payload parsed; assign a value to replace it with its JSON (keys sorted)
//	msg.base64, msg.size             the payload in base64, its length
//	msg.drop()                       the message is not forwarded (later scripts do not see it)
//
// Assigning the payload keeps the opcode; set msg.opcode to change it. A text message must
// be UTF-8. The handler runs on the relay (the Manager is an engine.MessageHook, registered
// only while some script defines websocketMessage, so WebSockets are otherwise copied, not
// parsed): while it runs, later messages of that direction wait; pings and pongs do not.
// Messages compressed with permessage-deflate and messages over 4 MiB are not given to
// the handler and pass unmodified (the engine's record of them says so).
//
// # Safety
//
// Each call has a time budget (Budget, default 100 ms) and a memory cap (MemoryCap, the
// heap's growth during the call, default 256 MiB; memcap.go), both enforced with goja's
// Interrupt. A
// regular expression that goja runs with regexp2 (lookaround, backreferences), which the
// interrupt cannot reach, has a match timeout of the default budget, so catastrophic
// backtracking ends there too and the error names the line of the match. The request and
// response bodies are read (up to MaxBody) before a script's turn, so a client or origin
// that sends slowly holds only its own exchange. A
// script that throws or runs out of time leaves the flow exactly as it was (edits are
// applied only when a handler returns normally), the error is added to the session's
// comment and to the log with file:line, and traffic goes on. For websocketMessage, any
// handler's error or timeout forwards the message exactly as it came (the other scripts'
// edits of it too), and the error is recorded on the message (session.Message.HookError)
// and in the log. Scripts have no file,
// network or process access: only the API above (no require, no timers).
//
// # Concurrency
//
// Each script has one goja runtime, which is not safe for concurrent use: calls into the
// same script are serialized by a mutex, so a slow script slows only the exchanges that
// reach it. A script that sets exports.filter (a filter expression, inspector/filter) is
// reached only by the flows it matches, evaluated on the session at each stage: the
// others never wait for its runtime. OnRequest and OnResponse are safe for concurrent use.
package script
