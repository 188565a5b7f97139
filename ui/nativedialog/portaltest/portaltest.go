//go:build linux

// Package portaltest runs a private D-Bus session bus (dbus-daemon) and a stand-in for the
// XDG desktop portal's FileChooser on it, for tests of code that shows file dialogs through
// the portal: the bus, the method calls and the Response signals are real, the dialog is
// answered by a function of the test.
package portaltest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

// Bus is a dbus-daemon of the test's own, listening on a socket in a temporary folder.
type Bus struct {
	Addr string
	cmd  *exec.Cmd
}

// busConfig is a session bus with no service activation (so a desktop portal installed on
// the machine is never started) that lets everything be owned and sent.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// StartBus starts dbus-daemon with its socket and configuration in dir.
func StartBus(dir string) (*Bus, error) {
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return nil, fmt.Errorf("dbus-daemon is not installed (apt-get install dbus-daemon): %w", err)
	}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, filepath.Join(dir, "bus")), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer // read only after Wait
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n') // printed once the bus listens
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("dbus-daemon printed no address: %w: %s", err, stderr.Bytes())
	}
	return &Bus{Addr: strings.TrimSpace(line), cmd: cmd}, nil
}

// Close stops the daemon.
func (b *Bus) Close() error {
	b.cmd.Process.Kill()
	b.cmd.Wait()
	return nil
}

// Call is one OpenFile or SaveFile call the portal received.
type Call struct {
	Method  string // "OpenFile" or "SaveFile"
	Parent  string
	Title   string
	Options map[string]dbus.Variant
	Handle  dbus.ObjectPath
}

// Answer is how the stand-in answers a call: the Response code (0 chosen, 1 cancelled,
// 2 other) and the chosen URIs. It runs on its own goroutine and may block; closed is
// closed when the client calls Request.Close.
type Answer func(c Call, closed <-chan struct{}) (code uint32, uris []string)

// Portal is the stand-in FileChooser, owning org.freedesktop.portal.Desktop on a bus.
type Portal struct {
	conn   *dbus.Conn
	answer Answer

	mu           sync.Mutex
	handleSuffix string
	calls        []Call
	closes       map[dbus.ObjectPath]chan struct{}
}

const (
	name = "org.freedesktop.portal.Desktop"
	path = dbus.ObjectPath("/org/freedesktop/portal/desktop")
)

// Serve registers a FileChooser of the given interface version on the bus at addr.
func Serve(addr string, version uint32, answer Answer) (*Portal, error) {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return nil, err
	}
	p := &Portal{conn: conn, answer: answer, closes: map[dbus.ObjectPath]chan struct{}{}}
	if err := conn.Export(chooser{p}, path, "org.freedesktop.portal.FileChooser"); err != nil {
		conn.Close()
		return nil, err
	}
	if _, err := prop.Export(conn, path, prop.Map{"org.freedesktop.portal.FileChooser": {
		"version": {Value: version, Emit: prop.EmitFalse},
	}}); err != nil {
		conn.Close()
		return nil, err
	}
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		conn.Close()
		return nil, errors.Join(errors.New("cannot own "+name), err)
	}
	return p, nil
}

// SetHandleSuffix makes the portal return request handles of its own choosing (as portals
// before 0.9 did) instead of the one the handle_token implies.
func (p *Portal) SetHandleSuffix(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handleSuffix = s
}

// Close leaves the bus.
func (p *Portal) Close() error { return p.conn.Close() }

// Calls are the calls received so far.
func (p *Portal) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

type chooser struct{ p *Portal }

func (c chooser) OpenFile(sender dbus.Sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	return c.p.request("OpenFile", string(sender), parent, title, opts)
}

func (c chooser) SaveFile(sender dbus.Sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	return c.p.request("SaveFile", string(sender), parent, title, opts)
}

type request struct {
	p      *Portal
	handle dbus.ObjectPath
}

// Close is org.freedesktop.portal.Request.Close: the client gave up.
func (r request) Close() *dbus.Error {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if ch, ok := r.p.closes[r.handle]; ok {
		close(ch)
		delete(r.p.closes, r.handle)
	}
	return nil
}

func (p *Portal) request(method, sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	token, _ := opts["handle_token"].Value().(string)
	if token == "" {
		token = "t"
	}
	handle := dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" +
		strings.ReplaceAll(strings.TrimPrefix(sender, ":"), ".", "_") + "/" + token)
	closed := make(chan struct{})
	p.mu.Lock()
	if p.handleSuffix != "" {
		handle = dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" + p.handleSuffix)
	}
	call := Call{Method: method, Parent: parent, Title: title, Options: opts, Handle: handle}
	p.calls = append(p.calls, call)
	p.closes[handle] = closed
	p.mu.Unlock()
	if err := p.conn.Export(request{p, handle}, handle, "org.freedesktop.portal.Request"); err != nil {
		return "", dbus.MakeFailedError(err)
	}
	go func() {
		code, uris := p.answer(call, closed)
		p.conn.Emit(handle, "org.freedesktop.portal.Request.Response", code,
			map[string]dbus.Variant{"uris": dbus.MakeVariant(uris)})
	}()
	return handle, nil
}
