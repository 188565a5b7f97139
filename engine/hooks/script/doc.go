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
//	request(flow)          request with its body (buffered on first read, up to MaxBody)
//	responseHeaders(flow)  response head arrived; body not available
//	response(flow)         response with its body
//	error(summary)         after a session ended with an error (asynchronous, read-only)
//	done(summary)          after every session ended (asynchronous, read-only)
//	websocketMessage(msg)  each WebSocket message, both ways, in order (asynchronous,
//	                       read-only: {session, from_client, opcode, text or base64, size, time})
//
// Scripts run in file name order at each stage. WebSocket messages are observed, not
// changed: the engine relays frames as they come (Engine.ObserveMessages).
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
// # Safety
//
// Each call has a time budget (Budget, default 100 ms) enforced with goja's Interrupt; a
// script that throws or runs out of time leaves the flow exactly as it was (edits are
// applied only when a handler returns normally), the error is added to the session's
// comment and to the log with file:line, and traffic goes on. Scripts have no file,
// network or process access: only the API above (no require, no timers).
//
// # Concurrency
//
// Each script has one goja runtime, which is not safe for concurrent use: calls into the
// same script are serialized by a mutex, so a slow script slows only the exchanges that
// reach it. OnRequest and OnResponse are safe for concurrent use.
package script
