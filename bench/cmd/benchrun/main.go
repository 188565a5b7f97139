// Command benchrun is Inspector's side-by-side benchmark (`make bench`): it starts a TLS
// origin (h1 + h2) on 127.0.0.1, then for every traffic shape and every proxy a fresh proxy
// process pinned to CPU 1 (the origin and the closed-loop load generator stay on CPU 0),
// measures the proxy's CPU time from /proc/PID/stat across the measured window, and writes
// the tables into a section of docs/perf.md of its own.
//
// Proxies: Inspector (the real binary, headless, capture + store on, and --no-capture),
// martian and goproxy (small mains in this module), mitmdump and nginx (a TLS reverse-proxy
// ceiling) when installed. A proxy that cannot run is skipped with one line in the report.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"inspector/bench/load"
	"inspector/bench/origin"
	"inspector/rootca"
)

type options struct {
	repo, out, inspectorBin string
	warmup, duration        time.Duration
	conns                   int
	streamBytes             int64
	only, shapes            string
	keep                    bool
	rev                     string
	profile                 string
}

func main() {
	pin := pinSelf()
	var o options
	flag.StringVar(&o.repo, "repo", "..", "root of the Inspector repository")
	flag.StringVar(&o.out, "out", "", "markdown file whose side-by-side section is (re)written; empty: print to stdout")
	flag.StringVar(&o.inspectorBin, "inspector", "", "Inspector binary to test (default: build it from -repo)")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each measured window")
	flag.DurationVar(&o.duration, "duration", 4*time.Second, "measured window per run (at most 10s)")
	flag.IntVar(&o.conns, "conns", 8, "client connections for the keep-alive and tunnel shapes")
	flag.Int64Var(&o.streamBytes, "stream-bytes", 1<<30, "bytes of the single streamed response")
	flag.StringVar(&o.only, "proxies", "", "comma list of proxies to run (default all): inspector, inspector-nocapture, martian, martian-har, goproxy, mitmdump, nginx")
	flag.StringVar(&o.shapes, "shapes", "", "comma list of shapes to run (default all)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	flag.StringVar(&o.rev, "rev", "", "build Inspector from this git revision of -repo (git archive) instead of the working tree")
	flag.StringVar(&o.profile, "profile", "", "write CPU profiles of an in-process Inspector under the keep-alive and tunnel shapes to this directory, and skip the tables")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, pin); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

func (o *options) validate() error {
	switch {
	case o.duration <= 0 || o.duration > 10*time.Second:
		return fmt.Errorf("-duration must be in (0, 10s], not %v", o.duration)
	case o.warmup < 0 || o.warmup > 10*time.Second:
		return fmt.Errorf("-warmup must be in [0, 10s], not %v", o.warmup)
	case o.conns < 1 || o.conns > 256:
		return fmt.Errorf("-conns must be in [1, 256], not %d", o.conns)
	case o.streamBytes < 1 || o.streamBytes > origin.MaxBytes:
		return fmt.Errorf("-stream-bytes must be in [1, %d], not %d", origin.MaxBytes, o.streamBytes)
	}
	return nil
}

func selected(list, name string) bool {
	if list == "" {
		return true
	}
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}

// shapeDef is one table: a load shape run against every proxy.
type shapeDef struct {
	key, title string
	shape      load.Shape
}

func shapes(conns int) []shapeDef {
	post := make([]byte, 64<<10)
	for i := range post {
		post[i] = 'p'
	}
	tiny := int64(len(origin.TinyJSON))
	return []shapeDef{
		{"ka-h1", fmt.Sprintf("Keep-alive tiny GET, HTTP/1.1 to the proxy (%d connections)", conns),
			load.Shape{Name: "ka-h1", Proto: "h1", Method: "GET", Path: "/tiny", Conns: conns, Streams: 1, WantBytes: tiny}},
		{"ka-h2", fmt.Sprintf("Keep-alive tiny GET, HTTP/2 to the proxy (%d connections, 1 stream each)", conns),
			load.Shape{Name: "ka-h2", Proto: "h2", Method: "GET", Path: "/tiny", Conns: conns, Streams: 1, WantBytes: tiny}},
		{"tunnel", fmt.Sprintf("New tunnel per request: CONNECT + TLS handshake (client resumes sessions) + tiny GET (%d connections)", conns),
			load.Shape{Name: "tunnel", Proto: "h1", Method: "GET", Path: "/tiny", Conns: conns, Streams: 1, NewTunnel: true, WantBytes: tiny}},
		{"get-64k", fmt.Sprintf("Keep-alive 64 KiB GET, HTTP/1.1 (%d connections)", conns),
			load.Shape{Name: "get-64k", Proto: "h1", Method: "GET", Path: "/bytes?n=65536", Conns: conns, Streams: 1, WantBytes: 65536}},
		{"get-256k", fmt.Sprintf("Keep-alive 256 KiB GET, HTTP/1.1 (%d connections)", conns),
			load.Shape{Name: "get-256k", Proto: "h1", Method: "GET", Path: "/bytes?n=262144", Conns: conns, Streams: 1, WantBytes: 262144}},
		{"post-64k", fmt.Sprintf("Keep-alive 64 KiB POST, HTTP/1.1 (%d connections)", conns),
			load.Shape{Name: "post-64k", Proto: "h1", Method: "POST", Path: "/echo-len", Body: post, Conns: conns, Streams: 1, WantBytes: int64(len(`{"len":65536}` + "\n"))}},
		{"h2-mux", "HTTP/2 multiplexed tiny GET (16 connections × 10 concurrent streams)",
			load.Shape{Name: "h2-mux", Proto: "h2", Method: "GET", Path: "/tiny", Conns: 16, Streams: 10, WantBytes: tiny}},
	}
}

// row is one proxy's figures for one shape.
type row struct {
	proxy    string
	skip     string // why there are no figures
	res      load.Result
	cpu      time.Duration // proxy CPU time across the window
	kernel   time.Duration // of which in the kernel (stime): syscalls, TCP on loopback
	hwmKiB   int64         // VmHWM: peak resident set, file-backed pages (bbolt's mmap) included
	anonKiB  int64         // RssAnon at the end of the run: heap and stacks only
	sessions int64         // Inspector: session lines printed during the run
}

// kernelPerReq is the kernel's share of cpuPerReq.
func (r row) kernelPerReq() time.Duration {
	if r.res.Requests == 0 {
		return 0
	}
	return r.kernel / time.Duration(r.res.Requests)
}

func (r row) cpuPerReq() time.Duration {
	if r.res.Requests == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.res.Requests)
}

type table struct {
	def  shapeDef
	rows []row
}

// streamRow is one proxy's figures for the single large streamed response.
type streamRow struct {
	proxy            string
	skip             string
	bytes            int64
	took, cpu        time.Duration
	rssBefore, hwm   int64 // KiB
	err              string
	inspectorCapture bool
}

type report struct {
	date, machine, command, pinning string
	loadBefore, loadAfter           string // /proc/loadavg: other work on the machine
	versions, skipped               []string
	opts                            options
	tables                          []table
	stream                          []streamRow
	streamSkip                      string
	h3                              string
	total                           time.Duration
}

func run(ctx context.Context, o options, pin pinning) error {
	began := time.Now()
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	benchDir := filepath.Join(repo, "bench")
	if _, err := os.Stat(filepath.Join(benchDir, "go.mod")); err != nil {
		return fmt.Errorf("-repo %s: no bench/go.mod there: %w", repo, err)
	}
	tmp, err := os.MkdirTemp("", "inspector-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	rep := &report{
		date:    time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		machine: machine(),
		command: strings.TrimSpace("cd bench && go run ./cmd/benchrun " + strings.Join(os.Args[1:], " ")),
		opts:    o,
	}
	rep.loadBefore = loadavg()
	if pin.on {
		rep.pinning = "proxy under test pinned to CPU 1; origin and load generator pinned to CPU 0 (taskset)"
	} else {
		rep.pinning = pin.reason + "; CPU per request still counts only the proxy's process"
	}

	// Binaries.
	inspBin := o.inspectorBin
	inspVersion := "Inspector: " + gitDescribe(repo)
	if o.inspectorBin != "" {
		inspVersion = "Inspector: the binary " + o.inspectorBin
	}
	if inspBin == "" {
		inspBin = filepath.Join(tmp, "inspector")
		src := repo
		if o.rev != "" {
			if src, err = exportRev(ctx, repo, o.rev, filepath.Join(tmp, "src")); err != nil {
				return err
			}
			inspVersion = "Inspector: " + gitDescribeRev(repo, o.rev)
		}
		logf("building Inspector")
		if err := goBuild(ctx, src, inspBin, "-tags", "migrated_fynedo", "./cmd/inspector"); err != nil {
			return fmt.Errorf("building Inspector: %w", err)
		}
	}
	peerBins := map[string]string{}
	for _, name := range []string{"martianproxy", "goproxyproxy"} {
		bin := filepath.Join(tmp, name)
		logf("building %s", name)
		if err := goBuild(ctx, benchDir, bin, "./cmd/"+name); err != nil {
			rep.skipped = append(rep.skipped, fmt.Sprintf("%s: skipped, it does not build: %v", strings.TrimSuffix(name, "proxy"), err))
			continue
		}
		peerBins[name] = bin
	}

	// Certificates and the origin.
	e := &env{tmp: tmp, pin: pin, caDir: filepath.Join(tmp, "ca")}
	ca, err := rootca.Load(e.caDir)
	if err != nil {
		return fmt.Errorf("MITM CA: %w", err)
	}
	_ = ca
	if e.caPool, err = poolFromFile(filepath.Join(e.caDir, rootca.CertFile)); err != nil {
		return err
	}
	oca, err := origin.NewCA()
	if err != nil {
		return err
	}
	if e.originCA, err = oca.WriteFiles(tmp); err != nil {
		return err
	}
	e.originPEM = oca.CertPEM
	_, ncert, nkey, err := oca.Leaf()
	if err != nil {
		return err
	}
	e.nginxCert, e.nginxKey = filepath.Join(tmp, "nginx-cert.pem"), filepath.Join(tmp, "nginx-key.pem")
	if err := errors.Join(os.WriteFile(e.nginxCert, ncert, 0o600), os.WriteFile(e.nginxKey, nkey, 0o600)); err != nil {
		return err
	}
	srv, err := origin.Start(oca)
	if err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	defer srv.Close()
	e.originAdr = srv.Addr

	// Proxies.
	var proxies []proxy
	add := func(key string, p proxy) {
		if selected(o.only, key) {
			proxies = append(proxies, p)
		}
	}
	rep.versions = append(rep.versions, inspVersion)
	add("inspector", proxy{name: "Inspector", start: e.inspector(inspBin, true)})
	add("inspector-nocapture", proxy{name: "Inspector capture off", start: e.inspector(inspBin, false)})
	mods := goModVersions(filepath.Join(benchDir, "go.mod"))
	if b, ok := peerBins["martianproxy"]; ok {
		rep.versions = append(rep.versions, "martian "+mods["github.com/google/martian/v3"])
		add("martian", proxy{name: "martian", start: e.goPeer(b)})
		add("martian-har", proxy{name: "martian + HAR", start: e.goPeer(b, "-har")})
	}
	if b, ok := peerBins["goproxyproxy"]; ok {
		rep.versions = append(rep.versions, "goproxy "+mods["github.com/elazarl/goproxy"])
		add("goproxy", proxy{name: "goproxy", start: e.goPeer(b)})
	}
	if b, err := lookPath("mitmdump"); err != nil {
		rep.skipped = append(rep.skipped, "mitmdump: skipped, not installed (Debian package mitmproxy; `make bench` installs it with apt-get when it can)")
	} else {
		rep.versions = append(rep.versions, "mitmdump "+strings.TrimPrefix(versionOf(b, "--version"), "Mitmproxy: "))
		add("mitmdump", proxy{name: "mitmdump", noBig: true, bigNote: "mitmdump buffers whole bodies in memory by default", start: e.mitmdump(b)})
	}
	if b, err := lookPath("nginx"); err != nil {
		rep.skipped = append(rep.skipped, "nginx: skipped, not installed (Debian package nginx; `make bench` installs it with apt-get when it can)")
	} else {
		rep.versions = append(rep.versions, strings.TrimPrefix(versionOf(b, "-v"), "nginx version: ")+" (TLS reverse proxy, no CONNECT: the ceiling)")
		add("nginx", proxy{name: "nginx", reverse: true, start: e.nginx(b)})
	}
	var h3rows []proxy
	if rep.h3 = h3Note(inspBin); rep.h3 == "" {
		if err := srv.StartH3(); err != nil {
			rep.h3 = "h3 upstream: skipped, " + err.Error()
		} else {
			for _, up := range []string{"h1", "h2", "h3"} {
				h3rows = append(h3rows, proxy{name: "Inspector, upstream " + up, start: e.inspector(inspBin, true, "--upstream-proto", up)})
			}
		}
	}

	if o.profile != "" {
		return profileRuns(ctx, o, e, benchDir)
	}

	defs := shapes(o.conns)
	if len(h3rows) > 0 && selected(o.only, "inspector") {
		defs = append(defs, shapeDef{key: "upstream",
			title: fmt.Sprintf("Towards the origin over HTTP/1.1, HTTP/2 and HTTP/3 (Inspector only, capture on): keep-alive tiny GET, HTTP/1.1 to the proxy (%d connections)", o.conns),
			shape: load.Shape{Name: "upstream", Proto: "h1", Method: "GET", Path: "/tiny", Conns: o.conns, Streams: 1, WantBytes: int64(len(origin.TinyJSON))}})
	}
	for _, sd := range defs {
		if !selected(o.shapes, sd.key) {
			continue
		}
		t := table{def: sd}
		run := proxies
		if sd.key == "upstream" {
			run = h3rows // Inspector variants instead of the peers
		}
		for _, p := range run {
			r := measure(ctx, o, p, sd.shape, e)
			t.rows = append(t.rows, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		rep.tables = append(rep.tables, t)
	}
	if selected(o.shapes, "stream") {
		for _, p := range proxies {
			rep.stream = append(rep.stream, streamOne(ctx, o, p, e))
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	rep.total = time.Since(began)
	rep.loadAfter = loadavg()
	md := rep.markdown()
	if o.out == "" {
		fmt.Print(md)
		return nil
	}
	return writeSection(o.out, md)
}

// lookPath finds a program on PATH or in the sbin directories a non-root PATH lacks (Debian
// installs nginx as /usr/sbin/nginx).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/sbin", name)
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func goBuild(ctx context.Context, dir, out string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", out}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(string(b)))
	}
	return nil
}

// exportRev writes the tree of git revision rev of repo into dir (git archive) and returns
// dir, so a build measures exactly that commit whatever the working tree holds.
func exportRev(ctx context.Context, repo, rev, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", rev)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var aerr tailBuffer
	archive.Stderr = &aerr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		untar.Wait()
		return "", fmt.Errorf("-rev %s: git archive: %v: %s", rev, err, aerr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("-rev %s: tar: %w", rev, err)
	}
	return dir, nil
}

func gitDescribeRev(repo, rev string) string {
	out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=commit %h (%cs)", rev).Output()
	if err != nil {
		return "revision " + rev
	}
	return strings.TrimSpace(string(out))
}

// gitDescribe names the commit the Inspector binary was built from, and says so when the
// working tree outside bench/ had uncommitted changes (the build includes them).
func gitDescribe(repo string) string {
	out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=commit %h (%cs)").Output()
	if err != nil {
		return "a working tree outside git"
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench", ":!docs").Output(); err == nil && len(st) > 0 {
		s += " plus uncommitted changes in " + strconv.Itoa(strings.Count(string(st), "\n")) + " files"
	}
	return s
}

// goModVersions maps module paths to versions from a go.mod's require lines.
func goModVersions(path string) map[string]string {
	m := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && strings.HasPrefix(f[1], "v") {
			m[f[0]] = f[1]
		}
	}
	return m
}

// h3Note says why the HTTP/3 upstream shape cannot run, or "" when the binary's
// --upstream-proto offers h3.
func h3Note(bin string) string {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "protocol towards origins") {
			if strings.Contains(l, "h3") {
				return ""
			}
			return "h3 upstream: skipped, this Inspector build has no HTTP/3 towards origins (--upstream-proto: " + strings.TrimSpace(strings.SplitN(l, ":", 2)[1]) + ")"
		}
	}
	return "h3 upstream: skipped, this Inspector build has no HTTP/3 towards origins"
}

// measure runs one shape against a fresh process of one proxy.
func measure(ctx context.Context, o options, p proxy, s load.Shape, e *env) row {
	r := row{proxy: p.name}
	if p.noH2 && s.Proto == "h2" {
		r.skip = "no HTTP/2 to clients"
		return r
	}
	// Write back what earlier rows left dirty in the page cache (a capture row stores
	// hundreds of MB), so this row's fsyncs do not wait for another row's data.
	syscall.Sync()
	pr, err := p.start(ctx)
	if err != nil {
		r.skip = "did not start: " + err.Error()
		logf("%-8s %-22s %s", s.Name, p.name, r.skip)
		return r
	}
	t := load.Target{Proxy: pr.addr, Origin: "https://" + e.originAdr, Roots: pr.roots}
	if p.reverse {
		t = load.Target{Origin: "https://" + pr.addr, Roots: pr.roots}
	}
	var u0, k0, u1, k1 time.Duration
	var cerr error
	res, err := load.Run(ctx, t, s, load.Options{
		Warmup: o.warmup, Duration: o.duration,
		OnStart: func() { u0, k0, cerr = cpuTimes(pr.pid) },
		OnEnd: func() {
			var err error
			u1, k1, err = cpuTimes(pr.pid)
			cerr = errors.Join(cerr, err)
		},
	})
	r.res = res
	r.cpu = (u1 + k1) - (u0 + k0)
	r.kernel = k1 - k0
	r.hwmKiB, _ = memKiB(pr.pid, "VmHWM")
	r.anonKiB, _ = memKiB(pr.pid, "RssAnon")
	serr := pr.stop()
	r.sessions = pr.lines.count()
	switch {
	case err != nil:
		r.skip = "run failed: " + err.Error()
	case cerr != nil:
		r.skip = "could not read its CPU time: " + cerr.Error()
	case s.Proto == "h2" && res.Proto != "" && res.Proto != "HTTP/2.0":
		r.skip = "answered with " + res.Proto + ", not HTTP/2"
	case res.Requests == 0:
		r.skip = "no request succeeded: " + res.FirstErr
		if s := pr.stderr.String(); s != "" {
			r.skip += " (stderr: " + lastLine(s) + ")"
		}
	}
	if serr != nil && r.skip == "" && !strings.Contains(p.name, "mitmdump") {
		logf("%s: stopping: %v", p.name, serr)
	}
	logf("%-8s %-22s %7.3f ms/req (kernel %.3f) %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d  hwm %d MiB %s",
		s.Name, p.name, ms(r.cpuPerReq()), ms(r.kernelPerReq()), res.RPS(), ms(res.P50), ms(res.P99), res.Errors, r.hwmKiB>>10, r.skip)
	return r
}

// streamOne sends one response of o.streamBytes through a fresh proxy and records its RSS
// growth (VmHWM after minus VmRSS before, after one small warm-up request) and CPU.
func streamOne(ctx context.Context, o options, p proxy, e *env) streamRow {
	sr := streamRow{proxy: p.name}
	if p.noBig {
		sr.skip = p.bigNote
		return sr
	}
	pr, err := p.start(ctx)
	if err != nil {
		sr.skip = "did not start: " + err.Error()
		return sr
	}
	defer pr.stop()
	t := load.Target{Proxy: pr.addr, Origin: "https://" + e.originAdr, Roots: pr.roots}
	if p.reverse {
		t = load.Target{Origin: "https://" + pr.addr, Roots: pr.roots}
	}
	if _, _, err := load.Stream(ctx, t, 1024); err != nil {
		sr.err = "warm-up: " + err.Error()
		return sr
	}
	sr.rssBefore, _ = memKiB(pr.pid, "VmRSS")
	c0, _ := cpuTime(pr.pid)
	n, took, err := load.Stream(ctx, t, o.streamBytes)
	c1, _ := cpuTime(pr.pid)
	sr.hwm, _ = memKiB(pr.pid, "VmHWM")
	sr.bytes, sr.took, sr.cpu = n, took, c1-c0
	if err != nil {
		sr.err = err.Error()
	}
	logf("stream   %-22s %d MiB in %v, cpu %v, rss %d → hwm %d MiB %s", p.name, n>>20, took.Round(time.Millisecond), sr.cpu, sr.rssBefore>>10, sr.hwm>>10, sr.err)
	return sr
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
