package nativedialog

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"inspector/ui/nativedialog/portaltest"
)

// startBus starts a private session bus and points this process at it; no dialog program
// is reachable, so only the portal can answer.
func startBus(t *testing.T) *portaltest.Bus {
	t.Helper()
	bus, err := portaltest.StartBus(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus.Addr)
	t.Setenv("PATH", t.TempDir())
	return bus
}

func servePortal(t *testing.T, bus *portaltest.Bus, version uint32, answer portaltest.Answer) *portaltest.Portal {
	t.Helper()
	p, err := portaltest.Serve(bus.Addr, version, answer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func choose(uri string) portaltest.Answer {
	return func(portaltest.Call, <-chan struct{}) (uint32, []string) { return 0, []string{uri} }
}

func TestPortalOpenFile(t *testing.T) {
	bus := startBus(t)
	p := servePortal(t, bus, 4, choose("file:///tmp/a%20dir/caf%C3%A9.har"))
	if !Available() {
		t.Fatal("Available() = false with a portal on the bus")
	}
	got, err := Open(testCtx(t), Options{Title: "Open HAR", InitialDir: "/tmp",
		Filters: []Filter{{"HAR files", []string{"*.har", "*.json"}}, {"All files", []string{"*"}}}})
	if err != nil || got != "/tmp/a dir/café.har" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	calls := p.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	c := calls[0]
	if c.Method != "OpenFile" || c.Title != "Open HAR" || c.Parent != "" {
		t.Errorf("call %+v", c)
	}
	if v := c.Options["current_folder"]; v.Signature().String() != "ay" || string(v.Value().([]byte)) != "/tmp\x00" {
		t.Errorf("current_folder %v", v)
	}
	if v := c.Options["modal"]; v.Value() != true {
		t.Errorf("modal %v", v)
	}
	if _, ok := c.Options["directory"]; ok {
		t.Error("directory set for a file")
	}
	// The stand-in's decoded variant no longer carries the wire signature: check the sent one.
	if _, opts := portalOptions(Options{Filters: []Filter{{"H", []string{"*.har"}}}}, "t"); opts["filters"].Signature().String() != "a(sa(us))" {
		t.Fatalf("filters signature %s", opts["filters"].Signature())
	}
	f := c.Options["filters"]
	want := [][]any{{"HAR files", [][]any{{uint32(0), "*.har"}, {uint32(0), "*.json"}}}, {"All files", [][]any{{uint32(0), "*"}}}}
	if !reflect.DeepEqual(f.Value(), want) {
		t.Errorf("filters %#v, want %#v", f.Value(), want)
	}
}

func TestPortalSaveFile(t *testing.T) {
	bus := startBus(t)
	p := servePortal(t, bus, 3, choose("file:///home/u/out.har"))
	got, err := Open(testCtx(t), Options{Title: "Export HAR", Save: true, Folder: true, InitialDir: "/home/u", InitialName: "inspector.har", Parent: 0x3a00007})
	if err != nil || got != "/home/u/out.har" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	c := p.Calls()[0]
	if c.Method != "SaveFile" || c.Parent != "x11:3a00007" {
		t.Errorf("call %s parent %q", c.Method, c.Parent)
	}
	if v := c.Options["current_name"]; v.Value() != "inspector.har" {
		t.Errorf("current_name %v", v)
	}
	if _, ok := c.Options["directory"]; ok {
		t.Error("a save dialog asked for a folder")
	}
}

func TestPortalFolder(t *testing.T) {
	bus := startBus(t)
	p := servePortal(t, bus, 3, choose("file:///srv/data"))
	got, err := Open(testCtx(t), Options{Title: "Open a store", Folder: true, Filters: []Filter{{"DB", []string{"*.db"}}}})
	if err != nil || got != "/srv/data" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	c := p.Calls()[0]
	if c.Options["directory"].Value() != true {
		t.Errorf("directory %v", c.Options["directory"])
	}
	if _, ok := c.Options["filters"]; ok {
		t.Error("filters sent for a folder")
	}
}

// A portal older than version 3 cannot pick folders: the caller falls back.
func TestPortalFolderOldVersion(t *testing.T) {
	bus := startBus(t)
	p := servePortal(t, bus, 2, choose("file:///srv/data"))
	if _, err := Open(testCtx(t), Options{Folder: true}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := len(p.Calls()); n != 0 {
		t.Errorf("%d calls to a portal that cannot pick folders", n)
	}
}

func TestPortalCancel(t *testing.T) {
	bus := startBus(t)
	servePortal(t, bus, 4, func(portaltest.Call, <-chan struct{}) (uint32, []string) { return 1, nil })
	if _, err := Open(testCtx(t), Options{Title: "x"}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
}

func TestPortalOtherEnd(t *testing.T) {
	bus := startBus(t)
	servePortal(t, bus, 4, func(portaltest.Call, <-chan struct{}) (uint32, []string) { return 2, nil })
	_, err := Open(testCtx(t), Options{})
	if err == nil || errors.Is(err, ErrCancelled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want a dialog error", err)
	}
}

func TestPortalBadURIs(t *testing.T) {
	for _, tc := range []struct{ name, uri string }{
		{"remote", "sftp://host/x.har"},
		{"other host", "file://example.com/x.har"},
		{"bad escape", "file:///x%zz"},
		{"none", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bus := startBus(t)
			servePortal(t, bus, 4, func(portaltest.Call, <-chan struct{}) (uint32, []string) {
				if tc.uri == "" {
					return 0, nil
				}
				return 0, []string{tc.uri}
			})
			p, err := Open(testCtx(t), Options{})
			if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrCancelled) {
				t.Fatalf("Open = %q, %v; want an error", p, err)
			}
		})
	}
}

// Portals before 0.9 return a request path of their own instead of the one the
// handle_token implies; the Response comes on that path.
func TestPortalOwnHandle(t *testing.T) {
	bus := startBus(t)
	p := servePortal(t, bus, 4, func(c portaltest.Call, _ <-chan struct{}) (uint32, []string) {
		return 0, []string{"file:///tmp/old.har"}
	})
	p.SetHandleSuffix("legacy1")
	got, err := Open(testCtx(t), Options{})
	if err != nil || got != "/tmp/old.har" {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

// Cancelling the context closes the portal's dialog (Request.Close).
func TestPortalContextCancel(t *testing.T) {
	bus := startBus(t)
	asked := make(chan struct{})
	closed := make(chan struct{})
	servePortal(t, bus, 4, func(_ portaltest.Call, c <-chan struct{}) (uint32, []string) {
		close(asked)
		<-c
		close(closed)
		return 1, nil
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { <-asked; cancel() }()
	if _, err := Open(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	select {
	case <-closed:
	case <-testCtx(t).Done():
		t.Fatal("Request.Close never reached the portal")
	}
}

func TestNoPortalOnBus(t *testing.T) {
	startBus(t)
	if Available() {
		t.Error("Available() = true with no portal and no dialog program")
	}
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

// A name owner that never answers the call: ErrUnavailable once portalStart has passed.
func TestPortalHung(t *testing.T) {
	bus := startBus(t)
	conn, err := dbus.Connect(bus.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.RequestName(portalName, dbus.NameFlagDoNotQueue); err != nil {
		t.Fatal(err)
	}
	// Owning the name without handling calls: godbus answers unknown methods with an
	// error, so swallow them with a handler that never replies.
	hang := make(chan struct{})
	defer close(hang)
	conn.Export(hung{hang}, portalPath, chooserIface)
	old := portalStart
	portalStart = 300 * time.Millisecond
	defer func() { portalStart = old }()
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

type hung struct{ c chan struct{} }

func (h hung) OpenFile(string, string, map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	<-h.c
	return "/", nil
}

func TestNoSessionBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+t.TempDir()+"/nobus")
	if _, err := Open(testCtx(t), Options{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("dead bus: err = %v, want ErrUnavailable", err)
	}
}
