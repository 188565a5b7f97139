package ui

import (
	"bytes"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/store"
)

// TestRenderFramesScreenshots captures real HTTP/2 and HTTP/3 traffic through a real
// engine into a real store with frame capture on, and renders the Frames tab of an
// h2→h3 and an h3→h3 session to PNG files. It is a tool, skipped unless
// INSPECTOR_SCREENSHOTS names the output folder:
//
//	INSPECTOR_SCREENSHOTS=$PWD/docs/screenshots LANG=C.UTF-8 go test -tags migrated_fynedo -run TestRenderFramesScreenshots ./ui/
func TestRenderFramesScreenshots(t *testing.T) {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to the output folder")
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := et.StartOrigin(t, et.OriginH3, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.UpstreamProto = "h3"
		c.ListenH3 = "127.0.0.1:0"
		c.FrameSink = func(id session.ID, fs []session.Frame) { st.PutFrames(id, fs) }
	}, o)
	p.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			st.Put(ev.Session)
		}
	}))
	send := func(c *http.Client, body []byte) session.ID {
		resp, err := c.Post(o.H3URL+"/echo?demo=frames", "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return p.Next(t).ID
	}
	h2 := send(p.Client(t, et.ClientH2), et.RandomBytes(100<<10))
	h3 := send(p.H3Client(t), et.RandomBytes(20<<10))

	// A WebSocket session (over HTTP/1.1 in a CONNECT tunnel) for the WebSocket tab.
	conn, br := p.WSDial(t, "wss://"+strings.TrimPrefix(o.URL, "https://")+"/ws")
	for _, m := range []string{"hello", `{"op":"subscribe","topic":"prices"}`, "ping 42"} {
		if err := et.WriteWSFrame(conn, 1, []byte(m), true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := et.ReadWSFrame(br); err != nil {
			t.Fatal(err)
		}
	}
	_ = et.WriteWSFrame(conn, 2, []byte{0, 1, 2, 3, 0xff}, true)
	_, _, _ = et.ReadWSFrame(br)
	_ = et.WriteWSFrame(conn, 8, []byte{3, 232}, true)
	_, _, _ = et.ReadWSFrame(br)
	conn.Close()
	ws := p.Next(t).ID
	_ = st.Flush()
	for _, id := range []session.ID{h2, h3} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_ = st.Flush()
			_ = st.FlushFrames()
			fs, _ := st.Frames(id)
			legs := map[string]bool{}
			for _, f := range fs {
				legs[f.Leg] = true
			}
			if len(legs) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %d: frames of both legs not stored: %v (dropped %d)", id, legs, st.FramesDropped())
			}
		}
	}

	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := New(a, w, Deps{Store: st})
	u.detail.inline = true
	u.SetThemeMode(ThemeLight)
	w.Resize(fyne.NewSize(1280, 820))
	shot := func(name string) {
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, w.Canvas().Capture()); err != nil {
			t.Fatal(err)
		}
	}
	u.SelectID(h2)
	u.detail.tabs.SelectIndex(3) // Frames
	shot("frames-h2-h3.png")
	u.SelectID(h3)
	u.detail.tabs.SelectIndex(3)
	u.detail.frames.typ.SetSelected("HEADERS")
	shot("frames-h3-headers.png")
	u.SelectID(ws)
	u.detail.tabs.SelectIndex(4) // WebSocket
	shot("websocket.png")
}
