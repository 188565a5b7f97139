package ui

import (
	"fyne.io/fyne/v2/test"

	"slices"
	"testing"

	"inspector/ui/viewmodel"
)

// TestProcessColumnInTheWindow: over a real store, the list shows the Process column by
// default, with the client process of each stored session (empty when unknown).
func TestProcessColumnInTheWindow(t *testing.T) {
	ss := sampleSessions()
	ss[0].Client.PID, ss[0].Client.Process = 4242, "curl"
	ss[1].Client.PID = 99 // a PID without a name
	st := openStore(t, ss...)
	u, w := newTestUI(t, Deps{Store: st})
	w.Canvas().Refresh(w.Content())
	k := slices.Index(u.list.cols, viewmodel.ColProcess)
	if k < 0 {
		t.Fatalf("Process column not shown by default: %v", u.list.cols)
	}
	hr := test.WidgetRenderer(u.list.header).(*headerRenderer)
	titled := false
	for _, tx := range hr.titles {
		titled = titled || tx.Text == "Process"
	}
	if !titled {
		t.Error("no \"Process\" header title")
	}
	want := map[string]bool{"curl": false, "pid 99": false}
	for _, r := range rowsOnScreen(u) {
		if _, ok := want[r.full[k]]; ok {
			want[r.full[k]] = true
		}
	}
	for text, seen := range want {
		if !seen {
			t.Errorf("no row shows %q in the Process column", text)
		}
	}
}
