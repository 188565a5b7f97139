package nativedialog

import (
	"errors"
	"strings"
	"testing"
)

// Run under Wine or Windows: comdlg32 loads, and a bad OPENFILENAMEW is reported as the
// dialog's error (CDERR_STRUCTSIZE), not as a cancel, without showing anything.
func TestComdlg32(t *testing.T) {
	if !Available() {
		t.Fatal("comdlg32's GetOpenFileNameW / GetSaveFileNameW not found")
	}
	for _, save := range []bool{false, true} {
		ofn, _ := buildOFN(Options{Save: save}, 0)
		ofn.structSize = 7
		proc := getOpenFileNameW
		if save {
			proc = getSaveFileNameW
		}
		err := callOFN(proc, ofn)
		if err == nil || errors.Is(err, ErrCancelled) || !strings.Contains(err.Error(), "0x0001") {
			t.Errorf("save=%v: err = %v, want CommDlgExtendedError 0x0001", save, err)
		}
	}
}
