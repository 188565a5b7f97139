package nativedialog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
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

// nmhdr is the NMHDR that starts the OFNOTIFY of a WM_NOTIFY.
type nmhdr struct {
	from, id uintptr
	code     uint32
}

var (
	getParent   = user32.NewProc("GetParent")
	postMessage = user32.NewProc("PostMessageW")
)

// answerWith installs a dialog hook that presses button (IDOK 1, IDCANCEL 2) once the
// dialog is up (CDN_INITDONE), so the real dialog runs and ends without a person.
func answerWith(t *testing.T, button uintptr) {
	const wmNotify, wmCommand, cdnInitDone = 0x004e, 0x0111, ^uint32(601 - 1) // CDN_FIRST = -601
	ofnTestHook = windows.NewCallback(func(hdlg, msg, _ uintptr, hdr *nmhdr) uintptr {
		if msg == wmNotify {
			if hdr.code == cdnInitDone {
				parent, _, _ := getParent.Call(hdlg)
				postMessage.Call(parent, wmCommand, button, 0)
			}
		}
		return 0
	})
	t.Cleanup(func() { ofnTestHook = 0 })
}

// dialogDir is a folder for a dialog to start in; removed best-effort, since the dialog's
// folder watch may still hold it (Wine's RemoveAll then fails with "Invalid function").
func dialogDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "nativedialog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestSaveDialogOK(t *testing.T) {
	dir := dialogDir(t)
	answerWith(t, 1)
	got, err := Open(testCtx(t), Options{Title: "Export HAR", Save: true, InitialDir: dir, InitialName: "inspector.har", Filters: harFilters})
	if want := filepath.Join(dir, "inspector.har"); err != nil || !strings.EqualFold(got, want) {
		t.Fatalf("Open = %q, %v; want %q", got, err, want)
	}
}

func TestOpenDialogCancel(t *testing.T) {
	answerWith(t, 2)
	if p, err := Open(testCtx(t), Options{Title: "Open HAR", InitialDir: dialogDir(t), Filters: harFilters}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Open = %q, %v; want ErrCancelled", p, err)
	}
}

// The folder dialog starts in InitialDir (BFFM_SETSELECTIONW) and OK returns it. The folder
// is the Windows directory, not one made for the test: Wine's tree learns of a folder made
// just before the dialog from a change notice that can arrive after the selection and move
// it to the parent (2 runs in 90 did that; none in 120 with a folder that already existed).
func TestFolderDialog(t *testing.T) {
	dir := os.Getenv("SystemRoot")
	if dir == "" {
		t.Fatal("SystemRoot is not set")
	}
	browseTestHook = func(hwnd uintptr) { postMessage.Call(hwnd, 0x0111, 1, 0) } // WM_COMMAND IDOK
	t.Cleanup(func() { browseTestHook = nil })
	got, err := Open(testCtx(t), Options{Title: "Open a store", Folder: true, InitialDir: dir})
	if err != nil || !strings.EqualFold(got, dir) {
		t.Fatalf("Open = %q, %v; want %q", got, err, dir)
	}
	browseTestHook = func(hwnd uintptr) { postMessage.Call(hwnd, 0x0111, 2, 0) } // IDCANCEL
	if p, err := Open(testCtx(t), Options{Folder: true, InitialDir: dir}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancel: Open = %q, %v", p, err)
	}
}
