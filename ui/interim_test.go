package ui

import (
	"net/http"
	"strings"
	"testing"

	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
)

// The Timing tab lists the 1xx responses the origin sent before the final one, each with
// its time after the request's headers and its fields.
func TestTimingTabShowsInterimResponses(t *testing.T) {
	s := mkSession(0, "a.example", "/page", 200, "text/html", "<p>hi</p>")
	s.Interim = []session.Interim{
		{Status: 103, Header: http.Header{"Link": {"</style.css>; rel=preload; as=style"}}, At: s.Timings.RequestHeaders.Add(3e6)},
	}
	st := openStore(t, s)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(1)
	rows := u.detail.timing.Objects
	if len(rows) != 5 {
		t.Fatalf("timing: %d rows, want 4 phases and one 1xx", len(rows))
	}
	l, ok := rows[4].(*widget.Label)
	if !ok || !strings.Contains(l.Text, "103 Early Hints at +3") || !strings.Contains(l.Text, "Link: </style.css>; rel=preload; as=style") {
		t.Fatalf("1xx row %#v", rows[4])
	}
}
