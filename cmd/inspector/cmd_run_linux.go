package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"inspector/engine"
	"inspector/engine/transparent"
	"inspector/platform/linux"
)

func init() {
	register("run", "run a command in a network namespace of its own, its TCP captured without proxy settings (Linux)", runRun)
}

// runRun is `inspector run [flags] -- CMD [ARGS]` (docs/capture-without-proxy.md): an
// instance for the time CMD runs, with CMD in a network namespace whose TCP goes to the
// instance's transparent listener and whose DNS goes to a forwarder of the instance.
func runRun(args []string) error {
	fs := newFlagSet("run")
	dataDir := dataDirFlag(fs)
	var f instanceFlags
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "proxy listener address of the instance (CMD does not need it)")
	fs.StringVar(&f.upstreamCA, "upstream-ca", "", "PEM file of extra roots trusted for origins")
	fs.StringVar(&f.upstreamInsecure, "upstream-insecure", "", "comma list of host globs whose certificate errors are ignored")
	fs.StringVar(&f.noDecrypt, "no-decrypt", "", "comma list of host globs tunnelled without decryption")
	fs.StringVar(&f.upstreamProto, "upstream-proto", "auto", "protocol towards origins: auto, h1, h2, h3")
	fs.Int64Var(&f.captureLimit, "capture-limit", 1<<20, "bytes of each body kept in memory per session (-1: none)")
	fs.Int64Var(&f.spillLimit, "spill-limit", 64<<20, "bytes of each body kept in all")
	dns := fs.String("dns", "", "resolver for CMD's DNS queries, host:port (default: the first nameserver of /etc/resolv.conf)")
	quiet := fs.Bool("quiet", false, "print nothing but CMD's own output")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: inspector run [flags] -- CMD [ARGS]")
		fs.PrintDefaults()
	}
	// Flags end at "--" or at CMD: CMD's own flags are its business.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usagef("run: no command given (inspector run [flags] -- CMD [ARGS])")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	upstreamDNS := *dns
	if upstreamDNS == "" {
		rc, _ := os.ReadFile("/etc/resolv.conf")
		upstreamDNS = transparent.SystemResolver(rc)
	} else if _, _, err := net.SplitHostPort(upstreamDNS); err != nil {
		return usagef("run: --dns %q is not host:port", upstreamDNS)
	}

	// The namespace first: when it cannot be made nothing else is started.
	ns, err := linux.NewNetns()
	if err != nil {
		if errors.Is(err, linux.ErrNetnsPermission) {
			return fmt.Errorf("run: %v; without it, `inspector launch terminal` opens a terminal whose programs use the proxy settings", err)
		}
		return fmt.Errorf("run: %w", err)
	}
	defer ns.Close()
	var ln net.Listener
	var pcs []net.PacketConn
	var dnsPort uint16
	if err := ns.Do(func() (err error) {
		if ln, err = net.Listen("tcp", ":0"); err != nil {
			return err
		}
		if pcs, dnsPort, err = transparent.ListenDNS(); err != nil {
			ln.Close()
		}
		return err
	}); err != nil {
		return fmt.Errorf("run: listeners in the namespace: %w", err)
	}
	defer ln.Close()
	rules := linux.Redirect{TCPPort: uint16(ln.Addr().(*net.TCPAddr).Port), RejectUDP443: true}
	if upstreamDNS != "" {
		rules.DNSPort = dnsPort
	}
	if err := ns.Apply(rules); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	logf := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(stderr, "inspector: "+format+"\n", a...)
		}
	}
	fwd := transparent.NewDNSForwarder(upstreamDNS, logf, pcs...) // closes pcs
	defer fwd.Close()

	f.headless = true
	inst, err := startInstance(dir, f)
	if err != nil {
		return err
	}
	inst.engine.Reserve(ln.Addr().String())
	env, err := caEnv(dir, inst.ca)
	if err != nil {
		return errors.Join(fmt.Errorf("run: CA bundle: %w", err), inst.shutdown())
	}
	name := filepath.Base(argv[0])
	srv := transparent.New(inst.engine, ln, transparent.Options{Via: "run", Client: name, Resolve: fwd.Resolve, Logf: logf})
	var captured atomic.Uint64
	inst.engine.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete && ev.Session != nil && ev.Session.Client.Process == name {
			captured.Add(1)
		}
	}))
	serveErr := make(chan error, 1)
	go func() { serveErr <- inst.engine.Serve() }()
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve() }()

	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// CMD dies with this process, even by kill -9: the signal goes when the namespace's
	// thread, which starts it, ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Ctrl-C reaches CMD from the terminal; this process waits for CMD to end instead.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	if err := ns.Do(cmd.Start); err != nil {
		srv.Close()
		<-srvDone
		fwd.Close()
		return errors.Join(fmt.Errorf("run: %w", err), inst.shutdown())
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var werr error
wait:
	for {
		select {
		case werr = <-waitErr:
			break wait
		case s := <-sig:
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				_ = cmd.Process.Signal(s)
			}
		}
	}
	srv.Close()
	srvErr := <-srvDone
	fwd.Close()
	ns.Close()
	err = inst.shutdown()
	<-serveErr
	if !*quiet {
		fmt.Fprintf(stderr, "inspector: %s captured from %s (inspector sessions --data-dir %s)\n", plural(captured.Load(), "session", "sessions"), name, dir)
	}
	if err = errors.Join(err, srvErr); err != nil {
		return err
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitStatus(128 + int(ws.Signal()))
		}
		return exitStatus(ee.ExitCode())
	}
	return werr
}
