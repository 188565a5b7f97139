package nativedialog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"
)

// The XDG desktop portal's file chooser
// (https://flatpak.github.io/xdg-desktop-portal/docs/doc-org.freedesktop.portal.FileChooser.html).
const (
	portalName    = "org.freedesktop.portal.Desktop"
	portalPath    = dbus.ObjectPath("/org/freedesktop/portal/desktop")
	chooserIface  = "org.freedesktop.portal.FileChooser"
	requestIface  = "org.freedesktop.portal.Request"
	requestPrefix = dbus.ObjectPath("/org/freedesktop/portal/desktop/request")
	responseOK    = 0
	responseClose = 1 // the user cancelled
)

// portalStart bounds connecting to the bus, finding the portal and getting the request
// handle (which may start the portal through D-Bus activation); the user's time to answer
// is not bounded.
var portalStart = 5 * time.Second

// sessionBusAddress is the session bus's address, without the autolaunch that would
// start a bus of our own.
func sessionBusAddress() string {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		p := filepath.Join(d, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + p
		}
	}
	return ""
}

// portalConn connects to the session bus and checks that a portal is there (running, or
// activatable). The connection lives until cancel is called.
func portalConn() (conn *dbus.Conn, cancel context.CancelFunc, err error) {
	addr := sessionBusAddress()
	if addr == "" {
		return nil, nil, ErrUnavailable
	}
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(portalStart, cancel)
	defer timer.Stop()
	conn, err = dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("%w: session bus: %v", ErrUnavailable, err)
	}
	var has bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, portalName).Store(&has); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("%w: session bus: %v", ErrUnavailable, err)
	}
	if !has {
		var names []string
		if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil || !slices.Contains(names, portalName) {
			cancel()
			return nil, nil, fmt.Errorf("%w: no desktop portal on the session bus", ErrUnavailable)
		}
	}
	return conn, cancel, nil
}

// portalAvailable reports whether a portal answers on the session bus.
func portalAvailable() bool {
	_, cancel, err := portalConn()
	if err != nil {
		return false
	}
	cancel()
	return true
}

// portalFilter is the portal's a(sa(us)): a name and rules, kind 0 being a glob.
type portalFilter struct {
	Name  string
	Rules []portalRule
}

type portalRule struct {
	Kind    uint32
	Pattern string
}

// portalOptions builds the method and the a{sv} options of the portal call for o.
func portalOptions(o Options, token string) (method string, opts map[string]dbus.Variant) {
	opts = map[string]dbus.Variant{
		"handle_token": dbus.MakeVariant(token),
		"modal":        dbus.MakeVariant(true),
	}
	method = chooserIface + ".OpenFile"
	if o.Save {
		method = chooserIface + ".SaveFile"
		if o.InitialName != "" {
			opts["current_name"] = dbus.MakeVariant(o.InitialName)
		}
	} else if o.Folder {
		opts["directory"] = dbus.MakeVariant(true)
	}
	if o.InitialDir != "" {
		opts["current_folder"] = dbus.MakeVariant(append([]byte(o.InitialDir), 0)) // a NUL-ended byte string
	}
	if len(o.Filters) > 0 && !o.Folder {
		fs := make([]portalFilter, 0, len(o.Filters))
		for _, f := range o.Filters {
			pf := portalFilter{Name: f.Name}
			for _, p := range f.Patterns {
				pf.Rules = append(pf.Rules, portalRule{0, p})
			}
			fs = append(fs, pf)
		}
		opts["filters"] = dbus.MakeVariant(fs)
	}
	return method, opts
}

// portalOpen shows the portal's file chooser and waits for its Response signal.
func portalOpen(ctx context.Context, o Options) (string, error) {
	conn, closeConn, err := portalConn()
	if err != nil {
		return "", err
	}
	defer closeConn()
	if o.Folder && portalVersion(conn) < 3 { // folders came with version 3
		return "", fmt.Errorf("%w: the desktop portal cannot choose folders", ErrUnavailable)
	}
	var b [8]byte
	rand.Read(b[:])
	token := "inspector" + hex.EncodeToString(b[:])
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	// Subscribe before the call, since the answer may come at once, and to every request
	// path: portals before 0.9 return a path of their own, not the one handle_token implies.
	if err := conn.AddMatchSignal(dbus.WithMatchPathNamespace(requestPrefix), dbus.WithMatchInterface(requestIface), dbus.WithMatchMember("Response")); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	parent := ""
	if o.Parent != 0 {
		parent = fmt.Sprintf("x11:%x", o.Parent)
	}
	method, opts := portalOptions(o, token)
	// Not bound to ctx: a request the portal made must be known, to be closed if ctx ends.
	startCtx, cancel := context.WithTimeout(context.Background(), portalStart)
	var handle dbus.ObjectPath
	err = conn.Object(portalName, portalPath).CallWithContext(startCtx, method, 0, parent, o.Title, opts).Store(&handle)
	cancel()
	if err != nil {
		return "", fmt.Errorf("%w: desktop portal: %v", ErrUnavailable, err)
	}
	for {
		select {
		case <-ctx.Done():
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Object(portalName, handle).CallWithContext(closeCtx, requestIface+".Close", 0)
			cancel()
			return "", ctx.Err()
		case sig, ok := <-signals:
			if !ok {
				return "", errors.New("desktop portal: the session bus connection closed")
			}
			if sig.Path != handle || sig.Name != requestIface+".Response" {
				continue
			}
			return portalResult(sig.Body)
		}
	}
}

// portalVersion is the FileChooser interface's version, 0 when it cannot be read.
func portalVersion(conn *dbus.Conn) uint32 {
	ctx, cancel := context.WithTimeout(context.Background(), portalStart)
	defer cancel()
	var v dbus.Variant
	if err := conn.Object(portalName, portalPath).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, chooserIface, "version").Store(&v); err != nil {
		return 0
	}
	n, _ := v.Value().(uint32)
	return n
}

// portalResult reads a Response signal's (u response, a{sv} results).
func portalResult(body []any) (string, error) {
	if len(body) != 2 {
		return "", fmt.Errorf("desktop portal: a Response of %d values", len(body))
	}
	code, ok := body[0].(uint32)
	if !ok {
		return "", fmt.Errorf("desktop portal: a Response code of type %T", body[0])
	}
	switch code {
	case responseOK:
	case responseClose:
		return "", ErrCancelled
	default:
		return "", fmt.Errorf("desktop portal: the dialog ended with code %d", code)
	}
	results, _ := body[1].(map[string]dbus.Variant)
	uris, _ := results["uris"].Value().([]string)
	if len(uris) == 0 {
		return "", errors.New("desktop portal: a Response with no file")
	}
	return fileURIPath(uris[0])
}

// fileURIPath turns a file:// URI into a path.
func fileURIPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("desktop portal: %q: %w", uri, err)
	}
	if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", fmt.Errorf("desktop portal: %q is not a local file", uri)
	}
	return u.Path, nil
}
