package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"inspector/engine"
	"inspector/engine/transparent"
	"inspector/platform/launch"
	"inspector/platform/linux"
)

// nsRun is one command in a network namespace of its own: its TCP goes to a transparent
// listener of an instance's engine and its DNS to a forwarder of that instance (inspector
// run, and the window's Intercept ▸ Run a command…). Everything it set up goes when the
// command ends; the command dies with the namespace's thread, so with the instance too,
// even after a kill -9.
type nsRun struct {
	ns      *linux.Netns
	ln      net.Listener
	fwd     *transparent.DNSForwarder
	srv     *transparent.Server
	srvDone chan error
	cmd     *exec.Cmd
}

// netnsError is what a namespace that cannot be made says: one line, and where there is
// no capability, what to use instead.
func netnsError(err error) error {
	if errors.Is(err, linux.ErrNetnsPermission) {
		return fmt.Errorf("run: %v; without it, `inspector launch terminal` opens a terminal whose programs use the proxy settings", err)
	}
	return fmt.Errorf("run: %w", err)
}

// newNSRun makes the namespace, its TCP and DNS listeners and its nftables rules. The
// resolver upstreamDNS ("" for none) answers the command's lookups. When it fails nothing
// is left.
func newNSRun(upstreamDNS string, logf func(string, ...any)) (*nsRun, error) {
	ns, err := linux.NewNetns()
	if err != nil {
		return nil, netnsError(err)
	}
	r := &nsRun{ns: ns}
	var pcs []net.PacketConn
	var dnsPort uint16
	if err := ns.Do(func() (err error) {
		if r.ln, err = net.Listen("tcp", ":0"); err != nil {
			return err
		}
		if pcs, dnsPort, err = transparent.ListenDNS(); err != nil {
			r.ln.Close()
		}
		return err
	}); err != nil {
		ns.Close()
		return nil, fmt.Errorf("run: listeners in the namespace: %w", err)
	}
	rules := linux.Redirect{TCPPort: uint16(r.ln.Addr().(*net.TCPAddr).Port), RejectUDP443: true}
	if upstreamDNS != "" {
		rules.DNSPort = dnsPort
	}
	r.fwd = transparent.NewDNSForwarder(upstreamDNS, logf, pcs...) // closes pcs
	if err := ns.Apply(rules); err != nil {
		r.close()
		return nil, fmt.Errorf("run: %w", err)
	}
	return r, nil
}

// start serves the namespace's connections into eng, their sessions named client, and
// starts cmd in the namespace. On failure everything is taken down.
func (r *nsRun) start(eng *engine.Engine, client string, cmd *exec.Cmd, logf func(string, ...any)) error {
	eng.Reserve(r.ln.Addr().String())
	r.srv = transparent.New(eng, r.ln, transparent.Options{Via: "run", Client: client, Resolve: r.fwd.Resolve, Logf: logf})
	r.srvDone = make(chan error, 1)
	go func() { r.srvDone <- r.srv.Serve() }()
	// cmd dies with this process, even by kill -9: the signal goes when the namespace's
	// thread, which starts it, ends.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := r.ns.Do(cmd.Start); err != nil {
		r.close()
		return fmt.Errorf("run: %w", err)
	}
	r.cmd = cmd
	return nil
}

// wait waits for the command and then takes everything down. werr is the command's own
// outcome, err the listener's.
func (r *nsRun) wait() (werr, err error) {
	werr = r.cmd.Wait()
	return werr, r.close()
}

// close stops the listener and the forwarder and ends the namespace (and so the command,
// if it still runs).
func (r *nsRun) close() error {
	var err error
	if r.srv != nil {
		r.srv.Close()
		err = <-r.srvDone
		r.srv = nil
	} else if r.ln != nil {
		r.ln.Close()
	}
	if r.fwd != nil {
		r.fwd.Close()
	}
	r.ns.Close()
	return err
}

// nsRunEnv is the environment of a command in a namespace: this process's, plus the CA
// variables of `inspector env` (no proxy: its traffic reaches the instance without one).
func nsRunEnv(dataDir string, caPEM []byte) ([]string, error) {
	files, err := envFiles(dataDir, caPEM)
	if err != nil {
		return nil, fmt.Errorf("run: CA bundle: %w", err)
	}
	env := os.Environ()
	for _, v := range launch.CAEnv(files) {
		env = append(env, v.Name+"="+v.Value)
	}
	return env, nil
}

// runSupport is nil where commands can run in a namespace of their own, else the one
// line that says why not.
func runSupport() error {
	if err := linux.NetnsSupported(); err != nil {
		return netnsError(err)
	}
	return nil
}

// run starts line (sh -c) in a namespace of its own whose traffic goes through this
// instance (the window's Intercept ▸ Run a command…). Its sessions are named after its
// first word, as a launched client ("curl (launched)"); its output goes to a file under
// DATA_DIR/launch/run. It ends with the instance.
func (l *launcher) run(line string) (string, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", usagef("run: no command given")
	}
	name := filepath.Base(fields[0])
	rc, _ := os.ReadFile("/etc/resolv.conf")
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "inspector: "+format+"\n", a...) }
	ns, err := newNSRun(transparent.SystemResolver(rc), logf)
	if err != nil {
		return "", err
	}
	env, err := nsRunEnv(l.dataDir, l.inst.ca.PEM())
	if err != nil {
		ns.close()
		return "", err
	}
	logDir := filepath.Join(l.dataDir, "launch", "run")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		ns.close()
		return "", err
	}
	out, err := os.CreateTemp(logDir, name+"-*.log")
	if err != nil {
		ns.close()
		return "", err
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	if err := ns.start(l.inst.engine, name+launchedSuffix, cmd, logf); err != nil {
		out.Close()
		return "", err
	}
	key := fmt.Sprintf("run:%s:%d", name, cmd.Process.Pid)
	l.mu.Lock()
	l.running[key] = cmd
	l.mu.Unlock()
	go func() {
		ns.wait()
		out.Close()
		l.mu.Lock()
		delete(l.running, key)
		l.mu.Unlock()
	}()
	return fmt.Sprintf("Running %s (process %d) in a network namespace of its own; output in %s; its sessions are client:%s",
		name, cmd.Process.Pid, out.Name(), name), nil
}
