package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"inspector/assets"
	"inspector/engine"
	"inspector/platform"
	"inspector/rootca"
	"inspector/store"
	"inspector/ui"
)

// appID is the desktop application id; it matches FyneApp.toml.
const appID = "io.github.inspector.app"

// runWindow runs the desktop window on inst until the window closes (or SIGINT/SIGTERM).
// It is the only place that creates the Fyne app. The caller shuts inst down afterwards.
func runWindow(inst *instance, sig <-chan os.Signal) error {
	a := app.NewWithID(appID)
	a.SetIcon(assets.Icon)
	w := a.NewWindow("Inspector")
	w.SetMaster()

	sub := inst.engine.Subscribe(4096)
	defer sub.Close()

	d := windowDeps(inst, sub.C)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Contract = newContractFeed(ctx, inst)
	u := ui.New(a, w, d)
	u.Start(ctx)

	// Fyne's driver quits on SIGINT and SIGTERM itself once its loop runs; calling Quit
	// as well raced it and panicked in GLFW after the loop had ended, skipping the
	// instance's clean-up (system proxy restored, store closed). Here: SIGHUP, which Fyne
	// leaves alone, and a SIGINT or SIGTERM that comes before Fyne's loop started (sig is
	// notified from before the address was announced).
	var started, early atomic.Bool
	a.Lifecycle().SetOnStarted(func() {
		started.Store(true)
		if early.Load() {
			go fyne.Do(a.Quit) // queued: OnStarted runs on the loop, before it takes work
		}
	})
	go func() {
		for {
			select {
			case s := <-sig:
				switch {
				case s == syscall.SIGHUP:
					fyne.Do(a.Quit)
					return
				case !started.Load():
					early.Store(true)
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	w.Resize(fyne.NewSize(1280, 820))
	w.ShowAndRun()
	return nil
}

// windowDeps adapts the instance's parts to the UI's interfaces.
func windowDeps(inst *instance, events <-chan engine.Event) ui.Deps {
	d := ui.Deps{Events: events, HAR: harCodec(), OpenStore: openStoreReadOnly, DataDir: inst.dataDir, Protos: instanceProtos, Schemas: protoSchemas{}}
	// Preferences live in the data directory: two instances on two data directories never
	// share (or race on) one file.
	if inst.dataDir != "" {
		p, err := ui.OpenFilePrefs(filepath.Join(inst.dataDir, "window.json"))
		d.Prefs, d.PrefsErr = p, err
	}
	if inst.ca != nil {
		ca := inst.ca
		d.CA = ca.PEM
		d.CAPath = filepath.Join(inst.dataDir, "ca", rootca.CertFile)
	}
	d.ProxyAuth = inst.proxyAuth
	if inst.store != nil {
		d.Store = inst.store
		if inst.dataDir != "" {
			dir := inst.dataDir
			d.Retention = ui.StoreRetention(inst.store, func(l store.Limits) error { return saveRetention(dir, l) })
		}
	}
	if inst.engine != nil {
		d.Engine = inst.engine
		if inst.keyLog != nil {
			d.TLSKeys = inst.keyLog
		}
	}
	if o := newOSAdapter(inst); o != nil {
		d.OS = o
	}
	if inst.debug != nil {
		d.Debug = inst.debug
	}
	if inst.shaper != nil {
		d.Network = inst.shaper
	}
	if inst.scripts != nil {
		d.Scripts = inst.scripts
	}
	if ic := newWindowIntercept(inst); ic != nil {
		d.Intercept = ic
	}
	if inst.mcp != nil && inst.mcpWrites != nil {
		d.MCP = mcpWindow{act: inst.mcp, writes: inst.mcpWrites, redact: inst.mcpRedact, rules: inst.redaction}
	}
	return d
}

// openStoreReadOnly opens another data directory's store for File ▸ Open store… (a
// read-only viewer; it shares the file with a running instance).
func openStoreReadOnly(dir string) (ui.Store, func() error, error) {
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{ReadOnly: true, LockTimeout: cliLockTimeout})
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}

// osAdapter implements ui.OS with the platform package.
type osAdapter struct {
	inst  *instance
	trust platform.TrustStore
	proxy *platform.Proxy
}

func newOSAdapter(inst *instance) *osAdapter {
	if inst.ca == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, px, err := platform.New(ctx, platform.Options{DataDir: inst.dataDir})
	if err != nil {
		return nil
	}
	// A failed "tell running apps" refresh is a warning, not a failure (platform.Warning):
	// the window's instance says so on stderr like `inspector proxy on` does.
	px.Warn = func(err error) { fmt.Fprintln(stderr, "inspector: warning: "+oneLine(err.Error())) }
	return &osAdapter{inst: inst, trust: ts, proxy: px}
}

func osCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func (o *osAdapter) CAStatus() (bool, string, error) {
	ctx, cancel := osCtx()
	defer cancel()
	st, err := o.trust.Status(ctx, o.inst.ca.Cert())
	if err != nil {
		return false, "", err
	}
	// The expiry comes first: the status bar's CA dialog shows the detail, and a root
	// near its end says so there with what to run.
	return st.Trusted(), rootca.ExpiryOf(o.inst.ca.Cert(), time.Now()).String() + "\n" + st.String(), nil
}

func (o *osAdapter) InstallCA() error {
	ctx, cancel := osCtx()
	defer cancel()
	return o.trust.Install(ctx, o.inst.ca.Cert())
}

func (o *osAdapter) RemoveCA() error {
	ctx, cancel := osCtx()
	defer cancel()
	return o.trust.Remove(ctx, o.inst.ca.Cert())
}

func (o *osAdapter) ProxyStatus() (bool, string, error) {
	ctx, cancel := osCtx()
	defer cancel()
	st, err := o.proxy.Status(ctx)
	if err != nil {
		return false, "", err
	}
	return st.Set, st.String(), nil
}

func (o *osAdapter) EnableProxy(addr string) error {
	ctx, cancel := osCtx()
	defer cancel()
	return o.proxy.Enable(ctx, addr)
}

func (o *osAdapter) DisableProxy() error {
	ctx, cancel := osCtx()
	defer cancel()
	return o.proxy.Disable(ctx)
}
