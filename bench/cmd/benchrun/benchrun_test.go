package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 250, stime 50 ticks.
	line := "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 1000 100000 200 18446744073709551615"
	d, err := parseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(300 / clockTicks * float64(time.Second)); d != want {
		t.Fatalf("got %v, want %v", d, want)
	}
	u, k, err := parseStat([]byte(line))
	if err != nil || u != time.Duration(250/clockTicks*float64(time.Second)) || k != time.Duration(50/clockTicks*float64(time.Second)) {
		t.Fatalf("user %v kernel %v, %v", u, k, err)
	}
	for _, bad := range []string{"", "1234 comm S 1", "1 (x) S 1 2 3", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x y"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestOwnProcess(t *testing.T) {
	pid := os.Getpid()
	if _, err := cpuTime(pid); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"VmRSS", "VmHWM"} {
		if v, err := memKiB(pid, f); err != nil || v <= 0 {
			t.Fatalf("%s = %d, %v", f, v, err)
		}
	}
	if _, err := memKiB(pid, "VmNoSuchField"); err == nil {
		t.Fatal("missing field: no error")
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "# Performance\n\n## Engine\n\ntext\n"
	once, err := replaceSection(doc, "## Side by side\n\nA\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(once, doc+"\n"+beginMark+"\n## Side by side\n\nA\n"+endMark+"\n") {
		t.Fatalf("append:\n%s", once)
	}
	// Replacing keeps what follows the section.
	withTail := once + "\n## Hot spots\n\nkept\n"
	twice, err := replaceSection(withTail, "## Side by side\n\nB\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(twice, "\nA\n") || !strings.Contains(twice, "\nB\n") || !strings.HasSuffix(twice, "\n## Hot spots\n\nkept\n") || !strings.HasPrefix(twice, doc) {
		t.Fatalf("replace:\n%s", twice)
	}
	if _, err := replaceSection("x\n"+endMark+"\n"+beginMark+"\n", "y"); err == nil {
		t.Fatal("unbalanced markers accepted")
	}
	if _, err := replaceSection("x\n"+beginMark+"\n", "y"); err == nil {
		t.Fatal("missing end marker accepted")
	}
	// writeSection on a real file.
	p := filepath.Join(t.TempDir(), "perf.md")
	if err := os.WriteFile(p, []byte(withTail), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(p, "## Side by side\n\nC\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "\nC\n") || !strings.HasSuffix(string(b), "kept\n") {
		t.Fatalf("file:\n%s", b)
	}
}

func TestOptionsValidate(t *testing.T) {
	good := options{warmup: time.Second, duration: 4 * time.Second, conns: 8, streamBytes: 1 << 30}
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*options){
		"long window": func(o *options) { o.duration = 11 * time.Second },
		"no window":   func(o *options) { o.duration = 0 },
		"warm-up":     func(o *options) { o.warmup = -time.Second },
		"conns":       func(o *options) { o.conns = 0 },
		"stream":      func(o *options) { o.streamBytes = 2 << 30 },
	} {
		o := good
		mod(&o)
		if err := o.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTargetsVerdicts(t *testing.T) {
	mk := func(proxy string, cpu time.Duration, n int64) row {
		r := row{proxy: proxy, cpu: cpu, kernel: cpu / 2}
		r.res.Requests = n
		return r
	}
	rep := &report{tables: []table{
		{def: shapeDef{key: "ka-h1"}, rows: []row{mk("Inspector", 50*time.Millisecond, 1000), mk("martian", 100*time.Millisecond, 1000), mk("Inspector capture off", 48*time.Millisecond, 1000)}},
		{def: shapeDef{key: "tunnel"}, rows: []row{mk("Inspector", 2*time.Second, 1000), mk("martian", 2*time.Second, 1000)}},
	}}
	got := strings.Join(rep.targets(), "\n")
	for _, want := range []string{
		"| keep-alive HTTPS MITM, capture + store on: CPU/req ≤ 0.6× martian, zero errors | 0.50× (0.050 ms, of it kernel 0.025), 0 errors; 0.6× martian is 0.060 ms, and martian's kernel time alone is 0.050 ms | met |",
		"| new tunnel per request: CPU/req ≤ 0.6× martian | 1.00× (2.000 ms) | **not met** |",
		"| goal: new tunnel per request ≤ 1.5 ms CPU | 2.000 ms | **not met** |",
		"| capture on ÷ off ≤ 1.10 (keep-alive h1) | 1.04 | met |",
		"| h2 multiplexed ≤ 0.5× nginx h2 | not measured (a run is missing) | unknown |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
