package har

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	bodyc "inspector/content"
	"inspector/engine/session"
)

// br, zstd and stacked bodies export decoded with the codings noted, and read back as
// they travelled (issue 15).
func TestExportDecodesBrotliAndZstd(t *testing.T) {
	text := strings.Repeat(`{"msg":"modern body"}`, 30)
	var ss []*session.Session
	for i, encs := range [][]string{{"br"}, {"zstd"}, {"gzip", "br"}} {
		enc, err := bodyc.Encode(encs, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 3, 1, 0, 0, i, 0, time.UTC)
		ss = append(ss, &session.Session{ID: session.ID(i + 1), Started: at,
			Client: session.Conn{Proto: session.HTTP2}, Upstream: session.Conn{Proto: session.HTTP2},
			Request: session.Request{Method: "GET", URL: "https://cdn.example/x", Proto: session.HTTP2},
			Response: &session.Response{Status: 200, Proto: session.HTTP2,
				Header: http.Header{"Content-Encoding": {strings.Join(encs, ", ")}, "Content-Type": {"application/json"}},
				Body:   session.Body{Data: enc, Size: int64(len(enc))}},
			Timings: session.Timings{RequestHeaders: at, ResponseDone: at.Add(time.Millisecond)}})
	}
	out := export(t, ss)
	var doc struct {
		Log struct {
			Entries []struct {
				Response struct {
					Content struct {
						Text            string `json:"text"`
						Encoding        string `json:"encoding"`
						ContentEncoding string `json:"_contentEncoding"`
						Raw             bool   `json:"_raw"`
						Size            int64  `json:"size"`
						Compression     int64  `json:"compression"`
					} `json:"content"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"br", "zstd", "gzip, br"} {
		c := doc.Log.Entries[i].Response.Content
		if c.Text != text || c.Encoding != "" || c.Raw || c.ContentEncoding != want || c.Size != int64(len(text)) {
			t.Errorf("%s: content %+v", want, c)
		}
		if c.Compression != int64(len(text))-ss[i].Response.Body.Size {
			t.Errorf("%s: compression %d", want, c.Compression)
		}
	}
	back, err := Read(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range back {
		s.ID = ss[i].ID // the store numbers imports; Read leaves IDs to it
		got, _, _, err := bodyc.Decode(s.Response.Header, s.Response.Body.Data, 1<<20)
		if err != nil || string(got) != text {
			t.Errorf("#%d read back: %v %q", i+1, err, got)
		}
	}
	if again := export(t, back); !bytes.Equal(again, out) {
		a, b := strings.Split(string(out), "\n"), strings.Split(string(again), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Errorf("export → read → export differs at line %d:\n%s\n%s", i+1, a[i], b[i])
				break
			}
		}
	}
}
