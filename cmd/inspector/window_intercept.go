package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"inspector/engine/wireguard"
	"inspector/platform/launch"
	"inspector/ui"
)

// windowIntercept is the window's Intercept menu on the instance: the launcher of
// `inspector launch`, the namespace runner of `inspector run` and WireGuard mode.
type windowIntercept struct{ inst *instance }

func newWindowIntercept(inst *instance) *windowIntercept {
	if inst.launcher == nil || inst.engine == nil || inst.ca == nil {
		return nil
	}
	return &windowIntercept{inst: inst}
}

// Clients lists the browsers, each with what was looked for when it is not installed,
// then the terminal.
func (w *windowIntercept) Clients() []ui.InterceptClient {
	var out []ui.InterceptClient
	for _, b := range launch.Browsers {
		c := ui.InterceptClient{ID: b.ID, Name: b.Name}
		if _, err := launch.Find(b, runtime.GOOS, os.Getenv, exec.LookPath); err != nil {
			c.Missing = lookedFor(err.Error())
		}
		out = append(out, c)
	}
	t := ui.InterceptClient{ID: "terminal", Name: "Terminal"}
	if _, _, err := findTerminal(); err != nil {
		var names []string
		for _, t := range terminals {
			names = append(names, t[0])
		}
		t.Missing = "looked for it on PATH: " + strings.Join(names, ", ")
	}
	return append(out, t)
}

// lookedFor is the "looked for it …" part of launch.Find's error.
func lookedFor(msg string) string {
	if i := strings.Index(msg, "looked for"); i >= 0 {
		return msg[i:]
	}
	return msg
}

// Launch starts a browser through its own SOCKS listener, or a terminal with the
// variables of `inspector env`.
func (w *windowIntercept) Launch(id string) (string, error) {
	if id == "terminal" {
		return openTerminal(w.inst.dataDir, w.inst.engine.Addr(), nil)
	}
	res, err := w.inst.launcher.launch(launchRequest{Name: id})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Launched %s (process %d): its sessions are client:%s", res.Client, res.PID, res.Client), nil
}

// RunSupport and Run are in nsrun_linux.go and cmd_run_other.go.
func (w *windowIntercept) RunSupport() error { return runSupport() }

func (w *windowIntercept) Run(line string) (string, error) { return w.inst.launcher.run(line) }

// Phone is the device's WireGuard configuration (the peer is made the first time). A new
// peer restarts a running WireGuard mode so that it is let in.
func (w *windowIntercept) Phone(name string) (ui.Phone, error) {
	dir := filepath.Join(w.inst.dataDir, "wireguard")
	keys, err := wireguard.LoadKeys(dir)
	if err != nil {
		return ui.Phone{}, err
	}
	p, added, err := keys.Peer(strings.TrimSpace(name))
	if err != nil {
		return ui.Phone{}, err
	}
	if added {
		if err := keys.Save(dir); err != nil {
			return ui.Phone{}, err
		}
	}
	port := w.inst.wireGuardPort()
	if added && port != 0 {
		if err := w.inst.wireGuardOn(port); err != nil {
			return ui.Phone{}, fmt.Errorf("restarting WireGuard mode for the new device: %w", err)
		}
	}
	ip := firstLANAddr()
	if ip == "" {
		return ui.Phone{}, fmt.Errorf("this machine has no non-loopback IPv4 address a device could reach")
	}
	ep := port
	if ep == 0 {
		ep = 51820
	}
	return ui.Phone{Name: p.Name, Config: keys.ClientConfig(p, net.JoinHostPort(ip, fmt.Sprint(ep))), Port: port}, nil
}

// EnablePhone turns WireGuard mode on while the instance runs.
func (w *windowIntercept) EnablePhone(port int) error { return w.inst.wireGuardOn(port) }
