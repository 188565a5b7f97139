package har

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

// The 1xx responses of a session go out as _interim and come back as they were; bad
// ones are refused with the field named.
func TestInterimRoundTrip(t *testing.T) {
	s := fixtures()[0]
	s.Interim = []session.Interim{
		{Status: 100, At: t0.Add(3 * time.Millisecond)},
		{Status: 103, Header: http.Header{"Link": {"</a.css>; rel=preload", "</b.js>; rel=preload"}}, At: t0.Add(5*time.Millisecond + 7)},
	}
	doc := export(t, []*session.Session{s})
	if !bytes.Contains(doc, []byte(`"_interim"`)) {
		t.Fatalf("no _interim in %s", doc)
	}
	back := importLikeStore(t, doc)
	if len(back) != 1 || !reflect.DeepEqual(back[0].Interim, s.Interim) {
		t.Fatalf("interim back %+v, want %+v", back[0].Interim, s.Interim)
	}
	if again := export(t, back); !bytes.Equal(again, doc) {
		t.Fatalf("re-export differs:\n%s\n%s", doc, again)
	}
	for _, c := range []struct {
		mod func(in map[string]any)
		msg string
	}{
		{func(in map[string]any) { in["status"] = 200 }, "_interim[1].status: want an informational status (100–199), got 200"},
		{func(in map[string]any) { in["time"] = "soon" }, `_interim[1].time: want an ISO 8601 date-time, got "soon"`},
		{func(in map[string]any) { in["time"] = "0000-01-01T00:00:00Z" }, "outside the years 0001–9999"},
		{func(in map[string]any) {
			in["headers"] = []any{map[string]any{"name": "Bad\nName", "value": "x"}}
		}, "_interim[1].headers[0].name"},
	} {
		var m map[string]any
		_ = json.Unmarshal(doc, &m)
		e := m["log"].(map[string]any)["entries"].([]any)[0].(map[string]any)
		c.mod(e["_interim"].([]any)[1].(map[string]any))
		bad, _ := json.Marshal(m)
		_, err := ReadAll(bytes.NewReader(bad), DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %q, got %v", c.msg, err)
		}
	}
}
