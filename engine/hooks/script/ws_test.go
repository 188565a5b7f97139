package script_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/script"
	"inspector/engine/session"
)

// wsSetup starts a Manager on files, a proxy with it and the echo origin, and opens a
// WebSocket through the proxy.
func wsSetup(t *testing.T, opts script.Options, files map[string]string) (*script.Manager, *et.Proxy, string, func() (net.Conn, *bufio.Reader)) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts.Dir, opts.PollInterval = dir, -1
	m, err := script.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	m.Install(p.Engine)
	dial := func() (net.Conn, *bufio.Reader) {
		return p.WSDial(t, "ws"+strings.TrimPrefix(o.URL, "http")+"/ws")
	}
	return m, p, dir, dial
}

func send(t *testing.T, c net.Conn, op int, data string) {
	t.Helper()
	if err := et.WriteWSFrame(c, op, []byte(data), true); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, br *bufio.Reader, op int, data string) {
	t.Helper()
	gotOp, got, err := et.ReadWSFrame(br)
	if err != nil || gotOp != op || string(got) != data {
		t.Fatalf("got op %d %q (%v), want op %d %q", gotOp, got, err, op, data)
	}
}

// finish closes the WebSocket and returns its session.
func finish(t *testing.T, p *et.Proxy, c net.Conn, br *bufio.Reader) *session.Session {
	t.Helper()
	send(t, c, 8, "\x03\xe8")
	expect(t, br, 8, "\x03\xe8")
	c.Close()
	return p.Next(t)
}

const wsRewrite = `
exports.websocketMessage = function (m) {
  log(m.direction + " " + m.opcode + " " + m.text + " #" + m.session);
  if (m.from_client && m.text === "drop me") { m.drop(); return; }
  if (m.from_client && m.text === '{"n":1}') { var v = m.json; v.n = 2; m.json = v; }
  if (m.from_client && m.text === "to binary") { m.opcode = 2; m.bytes = new Uint8Array([1, 2, 3]); }
  if (!m.from_client && m.text === "hello") m.text = "hello from " + m.url.split("/").pop();
};`

// A websocketMessage handler rewrites and drops messages both ways, on the wire.
func TestWebSocketMessageStageRewritesAndDrops(t *testing.T) {
	et.RequireNoLeaks(t)
	m, p, _, dial := wsSetup(t, script.Options{}, map[string]string{"ws.js": wsRewrite})
	c, br := dial()
	send(t, c, 1, "hello")
	expect(t, br, 1, "hello from ws") // the origin got "hello"; its echo was rewritten
	send(t, c, 1, "drop me")
	send(t, c, 1, `{"n":1}`)
	expect(t, br, 1, `{"n":2}`) // "drop me" never reached the origin
	send(t, c, 1, "to binary")
	expect(t, br, 2, "\x01\x02\x03")
	s := finish(t, p, c, br)

	var got []string
	for _, e := range m.Log() {
		if i := strings.Index(e.Text, " #"); i > 0 {
			got = append(got, e.Text[:i])
			if e.Text[i+2:] != fmt.Sprint(s.ID) || e.Session != s.ID {
				t.Errorf("log line %q for session %d, want %d", e.Text, e.Session, s.ID)
			}
		}
	}
	want := []string{"to_server 1 hello", "to_client 1 hello", "to_server 1 drop me",
		`to_server 1 {"n":1}`, `to_client 1 {"n":2}`, "to_server 1 to binary", "to_client 2 \x01\x02\x03"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("log %q\nwant %q", got, want)
	}
	var rec []string
	for _, msg := range s.Messages {
		if msg.Opcode < 8 {
			rec = append(rec, fmt.Sprintf("%v %d %q mod=%v drop=%v", msg.FromClient, msg.Opcode, msg.Data, msg.Modified, msg.Dropped))
		}
	}
	wantRec := []string{
		`true 1 "hello" mod=false drop=false`, `false 1 "hello from ws" mod=true drop=false`,
		`true 1 "drop me" mod=false drop=true`, `true 1 "{\"n\":2}" mod=true drop=false`,
		`false 1 "{\"n\":2}" mod=false drop=false`, `true 2 "\x01\x02\x03" mod=true drop=false`,
		`false 2 "\x01\x02\x03" mod=false drop=false`,
	}
	if strings.Join(rec, "\n") != strings.Join(wantRec, "\n") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(rec, "\n"), strings.Join(wantRec, "\n"))
	}
}

// An endless loop is interrupted within its budget, a throw after edits changes nothing,
// and a bad opcode is refused: each message goes on unmodified with the error recorded.
func TestWebSocketMessageStageFaultsPassUnmodified(t *testing.T) {
	et.RequireNoLeaks(t)
	m, p, _, dial := wsSetup(t, script.Options{Budget: 50 * time.Millisecond}, map[string]string{"bad.js": `
exports.websocketMessage = function (m) {
  if (!m.from_client) return;
  if (m.text === "loop") { m.text = "edited before the loop"; while (true) {} }
  if (m.text === "throw") { m.text = "edited"; throw new Error("no thanks"); }
  if (m.text === "opcode") { m.opcode = 9; }
  if (m.text === "json") { m.text = m.json.x; }
  m.text = m.text + "!";
};`, "later.js": `exports.websocketMessage = function (m) { if (m.from_client) log("later saw " + m.text); };`})
	c, br := dial()
	cases := map[string]string{
		"loop": "time budget of 50ms exceeded", "throw": "no thanks",
		"opcode": "opcode 9", "json": "msg.json",
	}
	order := []string{"loop", "throw", "opcode", "json"}
	for _, msg := range order {
		send(t, c, 1, msg)
		expect(t, br, 1, msg)
	}
	send(t, c, 1, "fine")
	expect(t, br, 1, "fine!")
	s := finish(t, p, c, br)
	i := 0
	for _, msg := range s.Messages {
		if !msg.FromClient || msg.Opcode != 1 || i >= len(order) {
			continue
		}
		if string(msg.Data) != order[i] || msg.Modified || !strings.Contains(msg.HookError, cases[order[i]]) ||
			!strings.Contains(msg.HookError, "bad.js") {
			t.Errorf("record %q modified %v hook error %q; want %q unmodified, error with %q", msg.Data, msg.Modified, msg.HookError, order[i], cases[order[i]])
		}
		i++
	}
	var errs, later int
	for _, e := range m.Log() {
		switch {
		case e.Error && e.File == "bad.js" && e.Session == s.ID && strings.Contains(e.Text, "bad.js:"):
			errs++ // with file:line
		case strings.HasPrefix(e.Text, "later saw "):
			later++
		}
	}
	if errs != len(order) || later != len(order)+1 {
		t.Errorf("%d errors with file:line, later.js ran %d times; log %+v", errs, later, m.Log())
	}
}

// The engine parses WebSockets only while a script has a websocketMessage handler: without
// one, fragments go through as they came (the copying relay); with one, a message is
// reassembled for the handler and goes on whole.
func TestWebSocketMessageHookOnlyWithHandler(t *testing.T) {
	et.RequireNoLeaks(t)
	m, p, dir, dial := wsSetup(t, script.Options{}, map[string]string{"a.js": `exports.request = function (f) {};`})
	fragments := func(want ...string) {
		t.Helper()
		c, br := dial()
		if err := writeFragment(c, 1, "ab", false); err != nil {
			t.Fatal(err)
		}
		if err := writeFragment(c, 0, "cd", true); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			op := 1
			if i > 0 {
				op = 0
			}
			expect(t, br, op, w)
		}
		finish(t, p, c, br)
	}
	fragments("ab", "cd")
	write := func(src string) {
		if err := os.WriteFile(filepath.Join(dir, "a.js"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		// A new size makes the change visible whatever the clock's resolution.
		if !m.Reload() {
			t.Fatal("reload saw no change")
		}
	}
	write(`exports.websocketMessage = function (m) {};`)
	fragments("abcd")
	write(`exports.request = function (f) { /* no websocketMessage any more */ };`)
	fragments("ab", "cd")
}

func writeFragment(c net.Conn, op int, data string, fin bool) error {
	b0 := byte(op)
	if fin {
		b0 |= 0x80
	}
	frame := []byte{b0, 0x80 | byte(len(data)), 0, 0, 0, 0} // a zero mask key
	_, err := c.Write(append(frame, data...))
	return err
}

// The websocket-rewrite.js example does what it says, on the wire.
func TestWebSocketExampleScript(t *testing.T) {
	et.RequireNoLeaks(t)
	ex, err := filepath.Abs("../../../docs/scripts/websocket-rewrite.js")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _, dial := wsSetup(t, script.Options{Files: []string{ex}}, nil)
	c, br := dial()
	send(t, c, 1, `{"type":"typing"}`)
	send(t, c, 1, `{"type":"chat","text":"hi"}`)
	// The origin echoes what it got; on the way back the example marks JSON as seen.
	expect(t, br, 1, `{"seen_by_proxy":true,"text":"hi [via Inspector]","type":"chat"}`)
	send(t, c, 1, "plain")
	expect(t, br, 1, "plain")
	finish(t, p, c, br)
}
