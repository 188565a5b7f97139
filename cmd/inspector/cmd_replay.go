package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"inspector/engine"
	"inspector/engine/hooks/replay"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/store"
)

func init() {
	register("replay", "send stored requests again as new sessions linked to their originals", runReplay)
}

// runReplay: inspector replay ID… [--count N] [--parallel P] [--json]. With a running
// instance it goes through its control API (POST /api/v1/replay), so the new sessions show
// up in that instance; otherwise it runs an engine in this process over the store (no
// listener is used by clients; the store's rules.json applies, breakpoints do not).
func runReplay(args []string) error {
	fs := newFlagSet("replay")
	dataDir := dataDirFlag(fs)
	count := fs.Int("count", 1, "times to send each request")
	parallel := fs.Int("parallel", 1, "requests in flight at once")
	asJSON := fs.Bool("json", false, "print one JSON result per line")
	upstreamCA := fs.String("upstream-ca", "", "PEM file of extra roots trusted for origins (in-process mode)")
	upstreamInsecure := fs.String("upstream-insecure", "", "comma list of host globs whose certificate errors are ignored (in-process mode)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("replay takes one or more session ids")
	}
	if *count < 1 || *count > replay.MaxCount {
		return usagef("replay: --count %d out of range 1–%d", *count, replay.MaxCount)
	}
	if *parallel < 1 || *parallel > replay.MaxParallel {
		return usagef("replay: --parallel %d out of range 1–%d", *parallel, replay.MaxParallel)
	}
	ids := make([]session.ID, 0, fs.NArg())
	for _, a := range fs.Args() {
		id, err := parseSessionID("replay", a)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var res []replay.Result
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{LockTimeout: cliLockTimeout})
	switch {
	case errors.Is(err, store.ErrLocked):
		api, cerr := newControlClient(dir)
		if cerr != nil {
			return fmt.Errorf("%w, but its control API is not available: %v", err, cerr)
		}
		res, err = api.replay(replayRequest{IDs: ids, Count: *count, Parallel: *parallel})
	case err != nil:
		return err
	default:
		res, err = replayInProcess(ctx, dir, st, ids, *count, *parallel, *upstreamCA, *upstreamInsecure)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}
	if res == nil && err != nil {
		return err
	}
	failed := 0
	for _, r := range res {
		if r.Error != "" {
			failed++
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintf(stdout, "%s\n", b)
			continue
		}
		switch {
		case r.ID != 0 && r.Error == "":
			fmt.Fprintf(stdout, "#%d → #%d %d\n", r.Original, r.ID, r.Status)
		case r.ID != 0:
			fmt.Fprintf(stdout, "#%d → #%d failed: %s\n", r.Original, r.ID, oneLine(r.Error))
		default:
			fmt.Fprintf(stdout, "#%d failed: %s\n", r.Original, oneLine(r.Error))
		}
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("replay: %d of %d requests failed", failed, len(res))
	}
	return nil
}

// replayInProcess runs an engine over st (which it does not close) for the replay.
func replayInProcess(ctx context.Context, dir string, st *store.Store, ids []session.ID, count, parallel int, upstreamCA, insecure string) ([]replay.Result, error) {
	sessions, err := loadSessions(st, ids)
	if err != nil {
		return nil, err
	}
	ca, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("system roots: %w", err)
	}
	if upstreamCA != "" {
		pem, err := os.ReadFile(upstreamCA)
		if err != nil {
			return nil, fmt.Errorf("--upstream-ca: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--upstream-ca: %s holds no PEM certificate", upstreamCA)
		}
	}
	eng, err := engine.New(engine.Config{Listen: "127.0.0.1:0", CA: ca, UpstreamRoots: roots,
		UpstreamInsecure: engine.SplitGlobs(insecure), NewID: st.NextID})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Close(cctx)
	}()
	rs, err := rules.New(filepath.Join(dir, "rules.json"))
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	rs.Install(eng)
	eng.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			st.Put(ev.Session)
		}
	}))
	res, err := replay.Run(ctx, eng, replay.Job{Sessions: sessions, Count: count, Parallel: parallel})
	if ferr := st.Flush(); err == nil {
		err = ferr
	}
	return res, err
}

// replay asks the running instance to replay.
func (c *controlClient) replay(req replayRequest) ([]replay.Result, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out replayResponse
	if err := c.do("POST", "/api/v1/replay", bytes.NewReader(b), &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}
