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
	"inspector/store"
)

func init() {
	register("run", "run a command in a network namespace of its own, its TCP captured without proxy settings (Linux)", runRun)
}

// runRun is `inspector run [flags] -- CMD [ARGS]` (docs/capture-without-proxy.md): an
// instance for the time CMD runs, with CMD in a network namespace whose TCP goes to the
// instance's transparent listener and whose DNS goes to a forwarder of the instance.
func runRun(args []string) error {
	rf := runFlagSet()
	fs, f := rf.fs, rf.f
	// Flags end at "--" or at CMD: CMD's own flags are its business.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	quiet := *rf.quiet
	argv := fs.Args()
	if len(argv) == 0 {
		return usagef("run: no command given (inspector run [flags] -- CMD [ARGS])")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	dir, err := rf.dataDir()
	if err != nil {
		return err
	}
	upstreamDNS, err := runResolver(*rf.dns)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) {
		if !quiet {
			fmt.Fprintf(stderr, "inspector: "+format+"\n", a...)
		}
	}
	// The namespace first: when it cannot be made nothing else is started.
	ns, err := newNSRun(upstreamDNS, logf)
	if err != nil {
		return err
	}
	if f.limits, err = rf.limits(dir); err != nil {
		ns.close()
		return err
	}
	f.headless = true
	inst, err := startInstance(dir, *f)
	if err != nil {
		ns.close()
		return err
	}
	env, err := nsRunEnv(dir, inst.ca.PEM())
	if err != nil {
		ns.close()
		return errors.Join(err, inst.shutdown())
	}
	name := filepath.Base(argv[0])
	var captured atomic.Uint64
	inst.engine.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete && ev.Session != nil && ev.Session.Client.Process == name {
			captured.Add(1)
		}
	}))
	serveErr := make(chan error, 1)
	go func() { serveErr <- inst.engine.Serve() }()

	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Ctrl-C reaches CMD from the terminal; this process waits for CMD to end instead.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	if err := ns.start(inst.engine, name, cmd, logf); err != nil {
		return errors.Join(err, inst.shutdown())
	}
	type result struct{ werr, err error }
	done := make(chan result, 1)
	go func() {
		werr, err := ns.wait()
		done <- result{werr, err}
	}()
	var res result
wait:
	for {
		select {
		case res = <-done:
			break wait
		case s := <-sig:
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				_ = cmd.Process.Signal(s)
			}
		}
	}
	err = inst.shutdown()
	<-serveErr
	if !quiet {
		fmt.Fprintf(stderr, "inspector: %s captured from %s (inspector sessions --data-dir %s)\n", plural(captured.Load(), "session", "sessions"), name, dir)
	}
	if err = errors.Join(err, res.err); err != nil {
		return err
	}
	var ee *exec.ExitError
	if errors.As(res.werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitStatus(128 + int(ws.Signal()))
		}
		return exitStatus(ee.ExitCode())
	}
	return res.werr
}

// runFlags are the flags of `inspector run`: the engine's flags as the main command has
// them (engineFlags), the retention flags, and run's own.
type runFlags struct {
	fs      *flag.FlagSet
	f       *instanceFlags
	dataDir func() (string, error)
	limits  func(string) (store.Limits, error)
	dns     *string
	quiet   *bool
}

func runFlagSet() runFlags {
	fs := newFlagSet("run")
	rf := runFlags{fs: fs, f: new(instanceFlags), dataDir: dataDirFlag(fs)}
	engineFlags(fs, rf.f, "127.0.0.1:0", "proxy listener address of the instance (CMD does not need it)")
	rf.limits = retentionFlags(fs)
	rf.dns = fs.String("dns", "", "resolver for CMD's DNS queries, host:port (default: the first nameserver of /etc/resolv.conf)")
	rf.quiet = fs.Bool("quiet", false, "print nothing but CMD's own output")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: inspector run [flags] -- CMD [ARGS]")
		fs.PrintDefaults()
	}
	return rf
}

// runResolver is the resolver a namespace's DNS goes to: --dns, else /etc/resolv.conf's.
func runResolver(dns string) (string, error) {
	if dns == "" {
		rc, _ := os.ReadFile("/etc/resolv.conf")
		return transparent.SystemResolver(rc), nil
	}
	if _, _, err := net.SplitHostPort(dns); err != nil {
		return "", usagef("run: --dns %q is not host:port", dns)
	}
	return dns, nil
}
