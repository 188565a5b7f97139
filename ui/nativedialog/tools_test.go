//go:build linux

package nativedialog

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// stubTool puts a shell script called name on a fresh PATH: it writes its arguments, one
// per NUL-ended field, to a file and runs body. It returns the arguments file.
func stubTool(t *testing.T, dir, name, body string) string {
	t.Helper()
	argsFile := filepath.Join(dir, name+".args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > '" + argsFile + "'\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return argsFile
}

func readArgs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// noBus leaves only the dialog programs: no session bus, a display, PATH = dir.
func noBus(t *testing.T, dir string) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("DISPLAY", ":99")
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("XDG_CURRENT_DESKTOP", "GNOME")
	t.Setenv("PATH", dir)
}

func TestZenityStub(t *testing.T) {
	dir := t.TempDir()
	noBus(t, dir)
	args := stubTool(t, dir, "zenity", "echo '/tmp/my file.har'")
	got, err := Open(testCtx(t), Options{Title: "Open HAR", InitialDir: "/tmp", Filters: harFilters})
	if err != nil || got != "/tmp/my file.har" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	want := []string{"--file-selection", "--title=Open HAR", "--filename=/tmp/", "--file-filter=HAR files | *.har *.json", "--file-filter=All files | *"}
	if a := readArgs(t, args); !reflect.DeepEqual(a, want) {
		t.Errorf("zenity args\n%q\nwant\n%q", a, want)
	}
	if _, err := Open(testCtx(t), Options{Save: true, InitialDir: "/srv", InitialName: "x.har"}); err != nil {
		t.Fatal(err)
	}
	if a, want := readArgs(t, args), []string{"--file-selection", "--save", "--filename=/srv/x.har"}; !reflect.DeepEqual(a, want) {
		t.Errorf("save args %q, want %q", a, want)
	}
	if _, err := Open(testCtx(t), Options{Folder: true, InitialDir: "/srv", Filters: harFilters}); err != nil {
		t.Fatal(err)
	}
	if a, want := readArgs(t, args), []string{"--file-selection", "--directory", "--filename=/srv/"}; !reflect.DeepEqual(a, want) {
		t.Errorf("folder args %q, want %q", a, want)
	}
}

func TestToolCancelAndFailure(t *testing.T) {
	dir := t.TempDir()
	noBus(t, dir)
	stubTool(t, dir, "zenity", "exit 1")
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("exit 1: err = %v, want ErrCancelled", err)
	}
	stubTool(t, dir, "zenity", "echo 'Gtk-WARNING: cannot open display' >&2; exit 5")
	_, err := Open(testCtx(t), Options{})
	if err == nil || errors.Is(err, ErrCancelled) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cannot open display") {
		t.Fatalf("exit 5: err = %v, want the tool's error", err)
	}
	stubTool(t, dir, "zenity", "echo; exit 0")
	if p, err := Open(testCtx(t), Options{}); err == nil {
		t.Fatalf("an empty line: Open = %q, want an error", p)
	}
	stubTool(t, dir, "zenity", "printf '/a\\n/b\\n'")
	if p, err := Open(testCtx(t), Options{}); err == nil {
		t.Fatalf("two lines: Open = %q, want an error", p)
	}
	// A script that cannot be executed: unavailable, so the caller falls back.
	os.WriteFile(filepath.Join(dir, "zenity"), []byte("#!/nonexistent/shell\n"), 0o755)
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("broken interpreter: err = %v, want ErrUnavailable", err)
	}
}

func TestToolNeedsDisplay(t *testing.T) {
	dir := t.TempDir()
	noBus(t, dir)
	t.Setenv("DISPLAY", "")
	stubTool(t, dir, "zenity", "echo /x")
	if Available() {
		t.Error("Available() = true without a display")
	}
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestKdialogStub(t *testing.T) {
	dir := t.TempDir()
	noBus(t, dir)
	t.Setenv("XDG_CURRENT_DESKTOP", "KDE")
	stubTool(t, dir, "zenity", "echo /from/zenity")
	args := stubTool(t, dir, "kdialog", "echo /from/kdialog")
	got, err := Open(testCtx(t), Options{Title: "Export HAR", Save: true, InitialDir: "/h", InitialName: "i.har", Filters: harFilters})
	if err != nil || got != "/from/kdialog" {
		t.Fatalf("on KDE: Open = %q, %v; want kdialog first", got, err)
	}
	want := []string{"--title", "Export HAR", "--getsavefilename", "/h/i.har", "*.har *.json|HAR files\n*|All files"}
	if a := readArgs(t, args); !reflect.DeepEqual(a, want) {
		t.Errorf("kdialog args\n%q\nwant\n%q", a, want)
	}
	if _, err := Open(testCtx(t), Options{Folder: true, Filters: harFilters}); err != nil {
		t.Fatal(err)
	}
	if a, want := readArgs(t, args), []string{"--getexistingdirectory", "."}; !reflect.DeepEqual(a, want) {
		t.Errorf("folder args %q, want %q", a, want)
	}
	// Elsewhere zenity comes first; kdialog alone still serves.
	t.Setenv("XDG_CURRENT_DESKTOP", "GNOME")
	if got, _ := Open(testCtx(t), Options{}); got != "/from/zenity" {
		t.Errorf("on GNOME: %q, want zenity's", got)
	}
	os.Remove(filepath.Join(dir, "zenity"))
	if got, _ := Open(testCtx(t), Options{}); got != "/from/kdialog" {
		t.Errorf("without zenity: %q, want kdialog's", got)
	}
}

// osascript's cancel is exit 1 with error -128; other failures are errors.
func TestOsascriptRun(t *testing.T) {
	dir := t.TempDir()
	noBus(t, dir)
	t.Setenv("DISPLAY", "")
	args := stubTool(t, dir, "osascript", "echo '/Users/u/a.har'")
	got, err := osascript.run(testCtx(t), Options{Title: "Open"})
	if err != nil || got != "/Users/u/a.har" {
		t.Fatalf("run = %q, %v", got, err)
	}
	if a := readArgs(t, args); !reflect.DeepEqual(a, []string{"-e", `POSIX path of (choose file with prompt "Open")`}) {
		t.Errorf("args %q", a)
	}
	stubTool(t, dir, "osascript", "echo '0:1: execution error: User canceled. (-128)' >&2; exit 1")
	if _, err := osascript.run(testCtx(t), Options{}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	stubTool(t, dir, "osascript", "echo '0:5: syntax error: Expected end of line. (-2741)' >&2; exit 1")
	if _, err := osascript.run(testCtx(t), Options{}); err == nil || errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want a script error", err)
	}
}
