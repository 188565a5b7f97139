package nativedialog

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unicode/utf16"
	"unsafe"
)

var harFilters = []Filter{{"HAR files", []string{"*.har", "*.json"}}, {"All files", []string{"*"}}}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOsascriptArgs(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Title: "Open HAR", InitialDir: "/Users/u", Filters: harFilters[:1]},
			`POSIX path of (choose file with prompt "Open HAR" default location POSIX file "/Users/u" of type {"har", "json"})`},
		{Options{Filters: harFilters}, `POSIX path of (choose file)`}, // "*" takes everything
		{Options{Title: `Say "hi" \ bye`, Save: true, InitialDir: "/tmp", InitialName: `a "b".har`, Filters: harFilters},
			`POSIX path of (choose file name with prompt "Say \"hi\" \\ bye" default name "a \"b\".har" default location POSIX file "/tmp")`},
		{Options{Title: "Store", Folder: true, InitialDir: "/d"},
			`POSIX path of (choose folder with prompt "Store" default location POSIX file "/d")`},
	} {
		if got := osascriptArgs(tc.o); !reflect.DeepEqual(got, []string{"-e", tc.want}) {
			t.Errorf("osascriptArgs(%+v)\n = %q\nwant %q", tc.o, got, tc.want)
		}
	}
}

func TestOFNFlags(t *testing.T) {
	if got := ofnFlags(Options{}); got != 0x0028180c {
		t.Errorf("open flags %#08x, want 0x0028180c (EXPLORER|LONGNAMES|FILEMUSTEXIST|PATHMUSTEXIST|NOCHANGEDIR|HIDEREADONLY)", got)
	}
	if got := ofnFlags(Options{Save: true}); got != 0x0028080e {
		t.Errorf("save flags %#08x, want 0x0028080e (EXPLORER|LONGNAMES|PATHMUSTEXIST|NOCHANGEDIR|HIDEREADONLY|OVERWRITEPROMPT)", got)
	}
}

func TestOFNBuild(t *testing.T) {
	if ofnFilter(nil) != nil {
		t.Error("a filter string for no filters")
	}
	want := "HAR files\x00*.har;*.json\x00All files\x00*\x00\x00"
	if got := string(utf16.Decode(ofnFilter(harFilters))); got != want {
		t.Errorf("filter %q, want %q", got, want)
	}
	ofn, file := buildOFN(Options{Title: "Export HAR", Save: true, InitialDir: `C:\Users\u`, InitialName: "inspector.har", Filters: harFilters}, 0x1234)
	if ofn.owner != 0x1234 || ofn.maxFile != ofnFileChars || ofn.filterIndex != 1 || ofn.flags != ofnFlags(Options{Save: true}) {
		t.Errorf("ofn %+v", ofn)
	}
	if got := fromUTF16(file); got != "inspector.har" {
		t.Errorf("file buffer %q", got)
	}
	if got := fromUTF16(unsafe.Slice(ofn.initialDir, 12)); got != `C:\Users\u` {
		t.Errorf("initial dir %q", got)
	}
	if got := fromUTF16(unsafe.Slice(ofn.title, 11)); got != "Export HAR" {
		t.Errorf("title %q", got)
	}
	if got := fromUTF16(unsafe.Slice(ofn.defExt, 4)); got != "har" {
		t.Errorf("default extension %q", got)
	}
	open, _ := buildOFN(Options{}, 0)
	if open.filter != nil || open.title != nil || open.initialDir != nil || open.defExt != nil {
		t.Errorf("empty options filled %+v", open)
	}
	// The C layout of OPENFILENAMEW (commdlg.h): sizeof 152 on 64-bit Windows, 88 on 32-bit.
	size, flags, flagsEx := unsafe.Sizeof(*ofn), unsafe.Offsetof(ofn.flags), unsafe.Offsetof(ofn.flagsEx)
	switch runtime.GOARCH {
	case "amd64", "arm64":
		if size != 152 || flags != 96 || flagsEx != 148 || ofn.structSize != 152 {
			t.Errorf("64-bit layout: size %d, Flags at %d, FlagsEx at %d, lStructSize %d; want 152, 96, 148", size, flags, flagsEx, ofn.structSize)
		}
	case "386", "arm":
		if size != 88 || flags != 52 || flagsEx != 84 {
			t.Errorf("32-bit layout: size %d, Flags at %d, FlagsEx at %d; want 88, 52, 84", size, flags, flagsEx)
		}
	}
}

func TestUTF16(t *testing.T) {
	if got := utf16z("a\x00b"); !reflect.DeepEqual(got, []uint16{'a', 0}) {
		t.Errorf("utf16z %v", got)
	}
	if ptr("") != nil {
		t.Error("ptr of empty")
	}
	if got := fromUTF16(utf16z("café ✓")); got != "café ✓" {
		t.Errorf("round trip %q", got)
	}
}
