package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"inspector/platform"
)

func init() {
	register("proxy on", "point the OS system proxy at the running instance (or --listen ADDR)", runProxyOn)
	register("proxy off", "restore the OS proxy settings saved when Inspector set them", runProxyOff)
	register("proxy status", "say whether Inspector set the system proxy, and the current settings", runProxyStatus)
	register("proxy watchdog", "internal: restores the system proxy when the instance that set it dies", runProxyWatchdog)
}

// newSystemProxy returns the SystemProxy journaling in dataDir. A variable so tests can
// substitute backends.
var newSystemProxy = func(ctx context.Context, dataDir string) (*platform.Proxy, error) {
	_, p, err := platform.New(ctx, platform.Options{DataDir: dataDir})
	return p, err
}

// openSystemProxy is newSystemProxy with warnings (a change made but, say, running apps
// not told) printed to stderr.
func openSystemProxy(ctx context.Context, dataDir string) (*platform.Proxy, error) {
	p, err := newSystemProxy(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	p.Warn = func(err error) { fmt.Fprintf(stderr, "warning: %v\n", err) }
	return p, nil
}

// watchdogCommand returns the program and arguments of the watchdog process for owner pid.
// A variable so tests can run the watchdog from the test binary.
var watchdogCommand = func(dataDir string, pid int) (string, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("finding the inspector binary for the proxy watchdog: %w", err)
	}
	return exe, []string{"proxy", "watchdog", "--data-dir", dataDir, "--pid", strconv.Itoa(pid)}, nil
}

// runningInstance is what 'proxy on' reads from DATA_DIR/control.json. PID is optional:
// when the instance writes it, the system proxy is tied to that process (restored by a
// watchdog when it dies); without it the setting stays until 'proxy off'.
type runningInstance struct {
	Proxy string `json:"proxy"`
	PID   int    `json:"pid,omitempty"`
}

func readRunningInstance(dataDir string) (*runningInstance, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, controlFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ri runningInstance
	if err := json.Unmarshal(data, &ri); err != nil {
		return nil, fmt.Errorf("%s is damaged: %v", filepath.Join(dataDir, controlFile), err)
	}
	return &ri, nil
}

// listening reports whether something accepts TCP connections at addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func runProxyOn(args []string) error {
	fs := newFlagSet("proxy on")
	dataDir := dataDirFlag(fs)
	listen := fs.String("listen", "", "proxy address to use when no instance is running (host:port)")
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	addr, owner := *listen, -1
	if addr != "" {
		if err := platform.CheckAddr(addr); err != nil {
			return usagef("--listen: %v", err)
		}
	} else {
		ri, err := readRunningInstance(dir)
		if err != nil {
			return err
		}
		if ri == nil || ri.Proxy == "" {
			return usagef("no running instance in %s; start 'inspector' first or pass --listen ADDR", dir)
		}
		if !listening(ri.Proxy) {
			return fmt.Errorf("%s names proxy %s but nothing listens there; start 'inspector' or pass --listen ADDR", filepath.Join(dir, controlFile), ri.Proxy)
		}
		addr = ri.Proxy
		if ri.PID > 0 {
			owner = ri.PID
		}
	}
	ctx := context.Background()
	p, err := openSystemProxy(ctx, dir)
	if err != nil {
		return err
	}
	p.OwnerPID = owner
	if err := p.Enable(ctx, addr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "system proxy set to %s\n", addr)
	if owner > 0 {
		if err := startWatchdog(dir, owner); err != nil {
			fmt.Fprintf(stderr, "warning: %v; if the instance dies, run 'inspector proxy off'\n", err)
		}
	} else {
		fmt.Fprintln(stdout, "run 'inspector proxy off' to restore the previous settings")
		if !listening(addr) {
			fmt.Fprintf(stderr, "warning: nothing listens on %s yet: web traffic fails until Inspector runs there\n", addr)
		}
	}
	if runtime.GOOS == "linux" {
		fmt.Fprintln(stdout, "for apps that read only the environment:")
		fmt.Fprintln(stdout, "  "+platform.ShellExport(addr))
	}
	return nil
}

func runProxyOff(args []string) error {
	fs := newFlagSet("proxy off")
	dataDir := dataDirFlag(fs)
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	p, err := openSystemProxy(ctx, dir)
	if err != nil {
		return err
	}
	if _, err := platform.ReadJournal(dir); errors.Is(err, platform.ErrNoJournal) {
		fmt.Fprintln(stdout, "system proxy was not set by Inspector; nothing to restore")
		return nil
	}
	if err := p.Disable(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "system proxy restored")
	return nil
}

func runProxyStatus(args []string) error {
	fs := newFlagSet("proxy status")
	dataDir := dataDirFlag(fs)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	p, err := openSystemProxy(ctx, dir)
	if err != nil {
		return err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(st)
	}
	fmt.Fprintln(stdout, st.String())
	return nil
}

// runProxyWatchdog is the watchdog process: it waits for --pid to die and then restores the
// journaled proxy settings; it exits when the journal is restored by anyone.
func runProxyWatchdog(args []string) error {
	fs := newFlagSet("proxy watchdog")
	dataDir := dataDirFlag(fs)
	pid := fs.Int("pid", 0, "process whose death triggers the restore")
	interval := fs.Duration("interval", time.Second, "how often to check")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *pid <= 0 {
		return usagef("proxy watchdog needs --pid")
	}
	if *interval <= 0 {
		return usagef("--interval must be positive")
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	// The watchdog must outlive a terminal's Ctrl-C or hang-up aimed at its owner.
	signal.Ignore(os.Interrupt, syscall.SIGHUP)
	ctx := context.Background()
	p, err := openSystemProxy(ctx, dir)
	if err != nil {
		return err
	}
	return platform.RunWatchdog(ctx, p, *pid, *interval)
}

// startWatchdog starts the watchdog process for owner, logging to DATA_DIR/proxy-watchdog.log.
func startWatchdog(dataDir string, owner int) error {
	exe, args, err := watchdogCommand(dataDir, owner)
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dataDir, "proxy-watchdog.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("proxy watchdog log: %w", err)
	}
	defer log.Close() // the child has its own copy
	if _, err := platform.StartWatchdog(exe, args, log); err != nil {
		return fmt.Errorf("starting the proxy watchdog: %w", err)
	}
	return nil
}

// recoverSystemProxy restores the system proxy settings journaled in dataDir by an earlier
// process that is gone (it crashed or was killed before restoring them). It is a no-op when
// there is no journal, when its owner still runs, or when the journal was made by
// 'inspector proxy on' without an owner. The instance calls it at start-up, before anything
// else touches the system proxy; it prints one line to stderr when it restored something.
func recoverSystemProxy(dataDir string) error {
	ctx := context.Background()
	p, err := openSystemProxy(ctx, dataDir)
	if err != nil {
		return err
	}
	restored, err := p.Recover(ctx)
	if err != nil {
		return fmt.Errorf("restoring the system proxy left set by an earlier run: %w", err)
	}
	if restored {
		fmt.Fprintln(stderr, "inspector: restored the system proxy settings left set by an earlier run")
	}
	return nil
}

// enableSystemProxy points the OS system proxy at proxyAddr on behalf of this process: it
// journals the current settings in dataDir, applies the new ones and starts a watchdog
// process that restores them if this process dies without doing so (kill -9, crash).
//
// The instance must call restore on every clean exit path (normal exit, SIGINT/SIGTERM,
// SIGHUP at logout, window close). restore is safe to call more than once and from any
// goroutine; later calls return the first call's result. If the watchdog cannot start,
// the proxy is still set and a warning goes to stderr (the next start recovers).
func enableSystemProxy(dataDir, proxyAddr string) (restore func() error, err error) {
	ctx := context.Background()
	p, err := openSystemProxy(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	p.OwnerPID = 0 // this process
	if err := p.Enable(ctx, proxyAddr); err != nil {
		return nil, err
	}
	if err := startWatchdog(dataDir, os.Getpid()); err != nil {
		fmt.Fprintf(stderr, "inspector: warning: %v; a crash would leave the system proxy set until the next start\n", err)
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() { rerr = p.Disable(context.Background()) })
		return rerr
	}, nil
}
