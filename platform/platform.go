// Package platform is Inspector's OS integration: trusting the root CA in the OS and browser
// certificate stores (TrustStore), pointing the OS system proxy at the engine and back
// (SystemProxy), with a journal and a watchdog so that a crash never leaves a machine
// without internet, and finding the local process behind a client connection (ProcessOf).
//
// New picks the implementations for the running OS (platform/linux, platform/darwin,
// platform/windows; a fallback elsewhere). OS commands go through a Runner so that the
// logic is tested with a fake on every OS and for real on Linux.
//
// # Crash safety
//
// Before SystemProxy.Enable changes anything it writes every setting it may change to
// DATA_DIR/proxy-journal.json (0600, written atomically) together with the owner's process
// id. Disable restores exactly those settings and deletes the journal. If the owner dies
// without Disable (kill -9, power loss), either the watchdog process (RunWatchdog, started
// with StartWatchdog) or the next start (Recover) restores them.
//
// This package never imports fyne.io/... and builds with CGO_ENABLED=0.
package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"inspector/platform/osapi"
)

// Re-exported vocabulary; see package osapi for the contracts.
type (
	// Runner runs OS commands; see osapi.Runner.
	Runner = osapi.Runner
	// ExecRunner is the real Runner.
	ExecRunner = osapi.ExecRunner
	// RecordingRunner is the fake Runner for tests.
	RecordingRunner = osapi.RecordingRunner
	// TrustStore trusts a root certificate in OS and browser stores; see osapi.TrustStore.
	TrustStore = osapi.TrustStore
	// TrustStatus says where a certificate is trusted; String() is human-readable.
	TrustStatus = osapi.TrustStatus
	// TrustPlace is one store in a TrustStatus.
	TrustPlace = osapi.TrustPlace
	// NeedsRootError carries the exact command to run with administrator rights.
	NeedsRootError = osapi.NeedsRootError
	// ProxyBackend is one OS proxy configuration; see osapi.ProxyBackend.
	ProxyBackend = osapi.ProxyBackend
	// Warning is a non-fatal problem of a backend call; see osapi.Warning.
	Warning = osapi.Warning
)

// ErrToolMissing is wrapped by errors about a missing OS tool.
var ErrToolMissing = osapi.ErrToolMissing

// ErrUnsupported is returned on systems without an implementation.
var ErrUnsupported = errors.New("not supported on this operating system")

// SystemProxy points the OS proxy settings at Inspector and back.
//
// Methods are safe to call from one goroutine at a time per data directory; two processes
// sharing a data directory coordinate only through the journal file. Calls run OS tools and
// may take a second; call them off the UI thread.
type SystemProxy interface {
	// Enable saves the current settings to the journal (unless a journal already holds the
	// original settings, which are kept) and points the OS proxy at addr (host:port).
	// On failure nothing stays changed.
	Enable(ctx context.Context, addr string) error
	// Disable restores the journaled settings and deletes the journal. Without a journal it
	// does nothing and returns nil.
	Disable(ctx context.Context) error
	// Status reports whether Inspector set the proxy and what the settings are now.
	Status(ctx context.Context) (ProxyStatus, error)
}

// ProxyStatus is the state of the system proxy.
type ProxyStatus struct {
	// Set is true while a journal says Inspector's settings are in place (every backend
	// applied) and have not been restored yet.
	Set bool `json:"set"`
	// Incomplete is true when a journal exists but Inspector's change did not complete
	// (Enable failed and its rollback failed too, or the process died while applying):
	// the settings may be partly changed; 'inspector proxy off' restores the saved ones.
	Incomplete bool `json:"incomplete,omitempty"`
	// Addr is the proxy address Inspector set (when Set).
	Addr string `json:"addr,omitempty"`
	// OwnerPID is the process that owns the change (0: set by 'inspector proxy on' with no
	// owning process; restored by 'inspector proxy off').
	OwnerPID int `json:"owner_pid,omitempty"`
	// OwnerAlive reports whether OwnerPID still runs.
	OwnerAlive bool `json:"owner_alive,omitempty"`
	// Current describes each backend's current settings, e.g. "GNOME: manual, http ...".
	Current []string `json:"current"`
}

// String is a short human-readable summary, several lines when there are several backends.
func (s ProxyStatus) String() string {
	var b strings.Builder
	switch {
	case s.Incomplete:
		b.WriteString("system proxy: Inspector's change did not complete and may be partly applied; 'inspector proxy off' restores the saved settings")
	case !s.Set:
		b.WriteString("system proxy: not set by Inspector")
	case s.OwnerPID == 0:
		fmt.Fprintf(&b, "system proxy: set by Inspector to %s (until 'inspector proxy off')", s.Addr)
	case s.OwnerAlive:
		fmt.Fprintf(&b, "system proxy: set by Inspector to %s (process %d)", s.Addr, s.OwnerPID)
	default:
		fmt.Fprintf(&b, "system proxy: left set to %s by process %d, which is gone; the next start or 'inspector proxy off' restores it", s.Addr, s.OwnerPID)
	}
	if len(s.Current) == 0 {
		b.WriteString("\nno supported proxy settings found on this system")
	}
	for _, c := range s.Current {
		b.WriteString("\n  " + c)
	}
	return b.String()
}

// Options configures New.
type Options struct {
	// DataDir holds the journal (proxy-journal.json). Required for SystemProxy.
	DataDir string
	// Runner runs OS commands; nil means ExecRunner.
	Runner Runner
	// Home is the user's home directory; empty means os.UserHomeDir.
	Home string
}

func (o *Options) fill() error {
	if o.Runner == nil {
		o.Runner = osapi.ExecRunner{}
	}
	if o.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("no home directory: %w", err)
		}
		o.Home = h
	}
	if o.DataDir == "" {
		return errors.New("platform: no data directory")
	}
	return nil
}

// New returns the TrustStore and SystemProxy of the running OS.
func New(ctx context.Context, opts Options) (TrustStore, *Proxy, error) {
	if err := opts.fill(); err != nil {
		return nil, nil, err
	}
	ts := newTrustStore(opts)
	backends := proxyBackends(ctx, opts)
	return ts, &Proxy{DataDir: opts.DataDir, Backends: backends}, nil
}

// CheckAddr validates a proxy address: host:port with a port in 1..65535.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy address %q: %v (want host:port)", addr, err)
	}
	if host == "" {
		return fmt.Errorf("proxy address %q: no host", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("proxy address %q: port must be 1-65535", addr)
	}
	return nil
}

// ShellExport is the shell line that points command-line tools at addr, for apps that read
// only the environment.
func ShellExport(addr string) string {
	u := "http://" + addr
	np := strings.Join(osapi.Bypass, ",")
	return fmt.Sprintf("export http_proxy=%s https_proxy=%s HTTP_PROXY=%s HTTPS_PROXY=%s no_proxy=%s NO_PROXY=%s", u, u, u, u, np, np)
}

// Warn wraps err as a *Warning; see osapi.Warn.
func Warn(err error) error { return osapi.Warn(err) }

// IsWarning reports whether err is only warnings; see osapi.IsWarning.
func IsWarning(err error) bool { return osapi.IsWarning(err) }
