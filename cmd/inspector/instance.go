package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"inspector/engine"
	"inspector/engine/hooks/script"
	"inspector/engine/netprofile"
	"inspector/engine/session"
	"inspector/engine/wireguard"
	"inspector/platform"
	"inspector/redact"
	"inspector/rootca"
	"inspector/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// instance is a running Inspector: the composition of CA, store, engine and control API.
type instance struct {
	dataDir string
	ca      *rootca.CA
	store   *store.Store
	engine  *engine.Engine
	// controlAddr is the control API's address (127.0.0.1:PORT).
	controlAddr string
	// debug holds breakpoints, rules and replay (control API write side, UI).
	debug *debugAPI
	// mcp logs what MCP clients did (/api/v1/mcp on the control API, `inspector mcp`).
	mcp *mcpActivity
	// mcpWrites says new MCP sessions on /api/v1/mcp get the write tools (--mcp-writes,
	// the window's Tools ▸ MCP… switch).
	mcpWrites *atomic.Bool
	// mcpRedact says MCP answers are masked (on unless --mcp-no-redact or the saved
	// switch); redaction holds the user's rules (DATA-DIR/redaction.json).
	mcpRedact *atomic.Bool
	redaction *redact.Settings
	// shaper applies network conditions (--network-profile, the window's dialog);
	// scripts runs the JavaScript addons (the window's Tools ▸ Scripts…).
	shaper  *netprofile.Shaper
	scripts *script.Manager
	// proxyAuth is the "user:password" the proxy listener demands ("" for none), for the
	// window's start page.
	proxyAuth string

	// launcher starts intercepted browsers (inspector launch, POST /api/v1/launch).
	launcher *launcher
	// socks is the --listen-socks listener (nil without).
	socks *engine.SOCKS
	// wg is WireGuard mode's endpoint (--wireguard, or turned on from the window), nil
	// while it is off.
	wgMu sync.Mutex
	wg   *wireguard.Server

	// keyLog is the TLS key-log file and switch (keylog.go).
	keyLog *keyLogSwitch

	stops []func() error // run in reverse order by shutdown
}

type instanceFlags struct {
	headless, allowRemote, systemProxy, resetStore  bool
	listen, upstreamCA, upstreamInsecure, noDecrypt string
	fingerprint, fingerprintGo                      string
	upstreamProto, reverse, listenH3, proxyAuth     string
	captureLimit, spillLimit                        int64
	noCapture                                       bool
	h3Refuse                                        string
	h3Passthrough                                   string
	mcpWrites, mcpNoRedact                          bool
	scripts                                         []string
	networkProfile, keylog                          string
	limits                                          store.Limits // retention (retention.json and --max-*)
	leafDays                                        int          // 0: rootca.MaxLeafDays
	listenSocks                                     string
	modes                                           captureModes // cmd_capture.go
}

// runInstance runs the proxy with a window, or headless.
func runInstance(args []string) error {
	fs, f, dataDir, limits := mainFlagSet()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	if f.limits, err = limits(dir); err != nil {
		return err
	}
	inst, err := startInstance(dir, *f)
	if err != nil {
		return err
	}
	var sub *engine.Subscription
	if f.headless {
		// Subscribe before announcing the address: a client that starts on the
		// "listening on" line must not finish a session before anyone listens.
		sub = inst.engine.Subscribe(4096, engine.EventComplete)
	}
	// Signals are caught from before the address is announced: one sent as soon as a
	// script sees "listening on" still gets the clean-up below.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	fmt.Fprintf(stdout, "listening on %s\n", inst.engine.Addr())
	if inst.socks != nil {
		fmt.Fprintf(stdout, "SOCKS5 listening on %s\n", inst.socks.Addr())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- inst.engine.Serve() }()

	if f.headless {
		err = inst.runHeadless(sub, serveErr, sig)
	} else {
		err = runWindow(inst, sig)
	}
	return errors.Join(err, inst.shutdown())
}

// mainFlagSet is the flag set of `inspector` itself (the window, or --headless).
func mainFlagSet() (*flag.FlagSet, *instanceFlags, func() (string, error), func(string) (store.Limits, error)) {
	fs := newFlagSet("")
	f := new(instanceFlags)
	dataDir := dataDirFlag(fs)
	fs.BoolVar(&f.headless, "headless", false, "run without a window")
	fs.Func("script", "load a JavaScript addon `FILE` (repeatable; DATA-DIR/scripts/*.js load too)", func(v string) error {
		f.scripts = append(f.scripts, v)
		return nil
	})
	fs.StringVar(&f.networkProfile, "network-profile", "", "emulate network conditions: a preset (3G, Slow 3G, Slow 4G, 4G, Lossy Wi-Fi, Offline), bw:KBPS[,up:KBPS][,latency:MS][,hosts:GLOB|GLOB][,url:REGEX]..., or none")
	fs.BoolVar(&f.mcpWrites, "mcp-writes", false, "let MCP clients of /api/v1/mcp use the tools that change anything (breakpoints, resume, replay, send, rules)")
	fs.StringVar(&f.keylog, "keylog", os.Getenv("SSLKEYLOGFILE"), "append the TLS secrets of both legs to `FILE` as NSS key-log lines, for Wireshark (default: $SSLKEYLOGFILE)")
	fs.BoolVar(&f.mcpNoRedact, "mcp-no-redact", false, "answer MCP clients of /api/v1/mcp with secrets unmasked (masking is on by default)")
	engineFlags(fs, f, "127.0.0.1:8080", "proxy listener address (port 0 picks a free port)")
	fs.StringVar(&f.listenSocks, "listen-socks", "", "also accept SOCKS5 clients on this address (loopback unless --allow-remote; user/password when --proxy-auth is set)")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback --listen address")
	fs.StringVar(&f.proxyAuth, "proxy-auth", "", "USER:PASSWORD proxy clients must send, or none (default: on with --allow-remote, generated in DATA-DIR/proxy-auth)")
	fs.StringVar(&f.reverse, "reverse", "", "reverse-proxy mode: every request on the listeners goes to this origin (http:// or https:// URL)")
	fs.StringVar(&f.listenH3, "listen-h3", "", "also accept HTTP/3 (QUIC) on this UDP address, decrypting with minted certificates")
	fs.StringVar(&f.h3Refuse, "h3-refuse", "", "comma list of host globs whose QUIC handshakes on --listen-h3 are refused, so clients fall back to TCP")
	fs.StringVar(&f.h3Passthrough, "h3-passthrough", "", "with --reverse: comma list of host globs; when the reverse target's host matches, --listen-h3 relays QUIC to it undecrypted (a tunnel session per client)")
	fs.BoolVar(&f.noCapture, "no-capture", false, "start with recording off: traffic is relayed but no sessions are captured or stored")
	fs.BoolVar(&f.resetStore, "reset-store", false, "if the session store is damaged, move it aside and start a new one")
	fs.BoolVar(&f.systemProxy, "system-proxy", false, "point the OS system proxy at this instance while it runs (restored on exit, and after a crash)")
	limits := retentionFlags(fs) // retention.go
	protoPathFlag(fs)            // content_api.go
	contractFlag(fs)             // cmd_contract.go
	captureModeFlags(fs, &f.modes)
	return fs, f, dataDir, limits
}

// engineFlags registers, with their defaults, the flags that shape an instance's engine,
// for every command that starts one (inspector, inspector run): one list, so no command
// starts an instance with a zero value where the main command has a default.
func engineFlags(fs *flag.FlagSet, f *instanceFlags, listen, listenUsage string) {
	fs.StringVar(&f.listen, "listen", listen, listenUsage)
	f.leafDays = rootca.MaxLeafDays
	fs.Func("leaf-days", "days each minted certificate lasts, 1 to 47 (default 47; browsers refuse longer ones)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > rootca.MaxLeafDays {
			return fmt.Errorf("--leaf-days %s: want 1 to %d days (browsers refuse longer leaves)", v, rootca.MaxLeafDays)
		}
		f.leafDays = n
		return nil
	})
	fs.StringVar(&f.upstreamCA, "upstream-ca", "", "PEM file of extra roots trusted for origins")
	fs.StringVar(&f.upstreamInsecure, "upstream-insecure", "", "comma list of host globs whose certificate errors are ignored")
	fs.StringVar(&f.noDecrypt, "no-decrypt", "", "comma list of host globs tunnelled without decryption")
	fs.StringVar(&f.fingerprint, "fingerprint", "mirror", "TLS ClientHello towards origins: mirror (the client's, the default) or go (Go's own; see docs/fingerprint.md)")
	fs.StringVar(&f.fingerprintGo, "fingerprint-go", "", "comma list of host globs that get Go's ClientHello whatever --fingerprint says")
	fs.StringVar(&f.upstreamProto, "upstream-proto", "auto", "protocol towards origins: auto (ALPN, and HTTP/3 after an origin's Alt-Svc), h1, h2, h3")
	fs.Int64Var(&f.captureLimit, "capture-limit", 1<<20, "bytes of each body kept in memory per session (-1: none)")
	fs.Int64Var(&f.spillLimit, "spill-limit", 64<<20, "bytes of each body kept in all: beyond --capture-limit they go to disk, then into the store (0: keep only --capture-limit)")
}

func startInstance(dir string, f instanceFlags) (_ *instance, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	inst := &instance{dataDir: dir}
	defer func() {
		if err != nil {
			_ = inst.shutdown() // undo what started before the failure
		}
	}()
	// A system proxy left pointing at a dead instance means no internet: fix that first.
	if err := recoverSystemProxy(dir); err != nil {
		fmt.Fprintf(stderr, "inspector: warning: %v\n", err)
	}
	if inst.ca, err = rootca.Load(filepath.Join(dir, "ca")); err != nil {
		return nil, err
	}
	days := f.leafDays
	if days == 0 { // not set: the longest lifetime every browser accepts
		days = rootca.MaxLeafDays
	}
	if err := inst.ca.SetLeafDays(days); err != nil {
		return nil, usageError{"--leaf-days: " + err.Error()}
	}
	if exp := rootca.ExpiryOf(inst.ca.Cert(), time.Now()); exp.Warn {
		fmt.Fprintln(stderr, "inspector: "+exp.String())
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("system roots: %w", err)
	}
	if f.upstreamCA != "" {
		pem, err := os.ReadFile(f.upstreamCA)
		if err != nil {
			return nil, fmt.Errorf("--upstream-ca: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--upstream-ca: %s holds no PEM certificate", f.upstreamCA)
		}
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{MoveAsideCorrupt: f.resetStore,
		MaxSessions: f.limits.MaxSessions, MaxBytes: f.limits.MaxBytes, MaxAge: f.limits.MaxAge})
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			return nil, fmt.Errorf("%w (start with --reset-store to move it aside and begin a new one)", err)
		}
		return nil, err
	}
	inst.store = st
	inst.stops = append(inst.stops, st.Close)
	if f.limits.MaxAge > 0 {
		// The age limit passes with time: apply it now and every minute, not only when
		// traffic commits.
		if n, err := st.Enforce(); err == nil && n > 0 {
			fmt.Fprintf(stderr, "inspector: %s\n", st.Stats().LastEviction.Message())
		}
		inst.stops = append(inst.stops, everyMinute(func() { st.Enforce() }))
	}
	if ss := st.Stats(); ss.MovedAside != "" || ss.Missing > 0 {
		if ss.MovedAside != "" {
			fmt.Fprintf(stderr, "inspector: the damaged session store was moved to %s; starting with an empty one\n", ss.MovedAside)
		}
		if ss.Missing > 0 {
			fmt.Fprintf(stderr, "inspector: the last run ended abruptly: %s\n", mayBeMissing(ss.Missing))
		}
	}

	auth, err := resolveProxyAuth(dir, f.proxyAuth, f.allowRemote, stderr)
	if err != nil {
		return nil, err
	}
	inst.proxyAuth = auth
	// Spill files of a run that ended abruptly belong to sessions that were never stored.
	spillDir := filepath.Join(dir, "spill")
	_ = os.RemoveAll(spillDir)
	if err := os.MkdirAll(spillDir, 0o700); err != nil {
		return nil, fmt.Errorf("spill folder: %w", err)
	}
	// The key log: --keylog at start, the window's switch after (keylog.go).
	inst.keyLog = &keyLogSwitch{}
	if f.keylog != "" {
		if err := inst.keyLog.set(f.keylog); err != nil {
			return nil, fmt.Errorf("--keylog: %w", err)
		}
	}
	inst.stops = append(inst.stops, inst.keyLog.close)
	var keyLog io.Writer
	if inst.keyLog.f != nil {
		keyLog = inst.keyLog.f
	}
	eng, err := engine.New(engine.Config{
		KeyLog:           keyLog,
		Listen:           f.listen,
		AllowRemote:      f.allowRemote,
		ProxyAuth:        auth,
		CA:               inst.ca,
		UpstreamRoots:    roots,
		UpstreamInsecure: engine.SplitGlobs(f.upstreamInsecure),
		NoDecrypt:        engine.SplitGlobs(f.noDecrypt),
		UpstreamProto:    f.upstreamProto,
		Fingerprint:      f.fingerprint,
		FingerprintGo:    engine.SplitGlobs(f.fingerprintGo),
		ListenH3:         f.listenH3,
		H3Refuse:         engine.SplitGlobs(f.h3Refuse),
		H3Passthrough:    engine.SplitGlobs(f.h3Passthrough),
		Reverse:          f.reverse,
		FrameSink:        func(id session.ID, frames []session.Frame) { st.PutFrames(id, frames) },
		CaptureLimit:     f.captureLimit,
		SpillDir:         spillDir,
		SpillLimit:       f.spillLimit,
		NewID:            st.NextID,
		ProcessOf:        platform.ProcessOf,
	})
	if err != nil {
		if errors.Is(err, engine.ErrRemoteListen) {
			return nil, usageError{err.Error()}
		}
		return nil, err
	}
	inst.engine = eng
	inst.keyLog.mu.Lock()
	inst.keyLog.eng = eng
	inst.keyLog.mu.Unlock()
	eng.SetCapture(!f.noCapture)
	inst.stops = append(inst.stops, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return eng.Close(ctx)
	})
	eng.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			st.Put(ev.Session)
		}
	}))

	if inst.debug, err = newDebugAPI(dir, eng, st); err != nil {
		return nil, err
	}
	inst.stops = append(inst.stops, func() error { inst.debug.bp.Close(); return nil })
	routes := inst.debug.handlers()
	scripts, err := startScripts(dir, f.scripts)
	if err != nil {
		return nil, err
	}
	inst.scripts = scripts
	inst.stops = append(inst.stops, func() error { scripts.Close(); return nil })
	for p, h := range scriptHandlers(scripts) {
		routes[p] = h
	}
	shaper, err := startNetProfile(f.networkProfile)
	if err != nil {
		return nil, err
	}
	inst.shaper = shaper
	installHooks(eng, inst.debug.rules, inst.debug.bp, scripts, shaper)
	for p, h := range protoHandlers(dir, inst.debug.rules.Folders) {
		routes[p] = h
	}
	for p, h := range netProfileHandlers(shaper) {
		routes[p] = h
	}
	inst.launcher = &launcher{dataDir: dir, inst: inst, running: map[string]*exec.Cmd{}}
	inst.stops = append(inst.stops, inst.launcher.stop)
	for p, h := range launchHandlers(inst.launcher) {
		routes[p] = h
	}
	inst.mcp = &mcpActivity{}
	inst.mcpWrites = new(atomic.Bool)
	inst.mcpWrites.Store(f.mcpWrites)
	rs, err := openRedaction(dir)
	if err != nil {
		return nil, err
	}
	inst.redaction = rs
	var red atomic.Pointer[redact.Redactor]
	rebuild := func() {
		if r, err := rs.Redactor(nil, redact.Options{}); err == nil {
			red.Store(r)
		}
	}
	rebuild()
	rs.OnChange(rebuild)
	inst.mcpRedact = new(atomic.Bool)
	inst.mcpRedact.Store(rs.MCP() && !f.mcpNoRedact)
	masker := func() *redact.Redactor {
		if !inst.mcpRedact.Load() {
			return nil
		}
		return red.Load()
	}
	for p, h := range mcpHandlers(dir, inst.mcpWrites, masker, inst.mcp) {
		routes[p] = h
	}
	addr, stop, err := startControl(dir, eng.Addr(), st, routes)
	if err != nil {
		return nil, fmt.Errorf("control API: %w", err)
	}
	inst.controlAddr = addr
	inst.stops = append(inst.stops, stop)
	eng.Reserve(addr)
	if f.listenSocks != "" {
		s, err := eng.ListenSOCKS(f.listenSocks, "")
		if err != nil {
			if errors.Is(err, engine.ErrRemoteListen) {
				return nil, usageError{"--listen-socks: " + err.Error()}
			}
			return nil, fmt.Errorf("--listen-socks: %w", err)
		}
		inst.socks = s
		inst.stops = append(inst.stops, s.Close)
		eng.Reserve(s.Addr())
	}
	inst.stops = append(inst.stops, inst.wireGuardOff) // before the engine's close
	if err := inst.startCaptureModes(f.modes, f.allowRemote); err != nil {
		return nil, err
	}

	if f.systemProxy {
		restore, err := enableSystemProxy(dir, eng.Addr())
		if err != nil {
			return nil, fmt.Errorf("--system-proxy: %w", err)
		}
		inst.stops = append(inst.stops, restore)
	}
	return inst, nil
}

// shutdown stops everything started, newest first: the engine completes its sessions
// before the store closes, so every completed session is committed.
func (inst *instance) shutdown() error {
	var errs []error
	for i := len(inst.stops) - 1; i >= 0; i-- {
		errs = append(errs, inst.stops[i]())
	}
	inst.stops = nil
	return errors.Join(errs...)
}

// runHeadless prints one line per completed session from sub until a signal on sig
// (SIGINT, SIGTERM, SIGHUP).
func (inst *instance) runHeadless(sub *engine.Subscription, serveErr <-chan error, sig <-chan os.Signal) error {
	defer sub.Close()
	health, stopHealth := inst.store.WatchHealth()
	defer stopHealth()
	healthy := true
	// Lines are buffered while more events wait and flushed when the feed is drained: one
	// write per burst instead of one per session, and never a line held back.
	out := bufio.NewWriterSize(stdout, 32<<10)
	defer out.Flush()
	for {
		select {
		case ev := <-sub.C:
			switch ev.Kind {
			case engine.EventComplete:
				out.WriteString(formatSessionLine(ev.Summary))
				out.WriteByte('\n')
			case engine.EventResync:
				fmt.Fprintf(out, "(output fell behind: %d session lines skipped; they are in the store)\n", sub.Dropped())
			}
			if len(sub.C) == 0 {
				out.Flush()
			}
		case h := <-health:
			if h.Healthy != healthy {
				healthy = h.Healthy
				fmt.Fprintln(stderr, healthLine(h))
			}
		case <-sig:
			return nil
		case err := <-serveErr:
			return err
		}
	}
}

// healthLine is what headless mode prints on stderr when the store starts failing and
// when it recovers (store.Health).
func healthLine(h store.Health) string {
	switch {
	case h.Healthy:
		return fmt.Sprintf("inspector: the session store works again (since %s); while it failed %s not stored, %s stored without their bodies",
			h.Since.Format(time.TimeOnly), plural(h.Lost, "session was", "sessions were"), plural(h.BodiesLost, "session was", "sessions were"))
	case h.Damaged:
		return fmt.Sprintf("inspector: the session store is damaged, sessions are not being stored: %s (restart with --reset-store to move it aside and begin a new one)", h.LastError)
	}
	return fmt.Sprintf("inspector: the session store is failing: %s (so far %s not stored, %s stored without their bodies)",
		h.LastError, plural(h.Lost, "session", "sessions"), plural(h.BodiesLost, "session", "sessions"))
}

// plural is "1 one" or "N many".
func plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// mayBeMissing is the "N sessions may be missing" note, in the right number.
func mayBeMissing(n uint64) string {
	return plural(n, "session may be missing", "sessions may be missing")
}
