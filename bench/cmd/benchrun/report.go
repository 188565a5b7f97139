package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

const (
	beginMark = "<!-- side-by-side:begin (written by `make bench`; edits inside are overwritten) -->"
	endMark   = "<!-- side-by-side:end -->"
)

// writeSection replaces the marked section of the markdown file at path with md, or appends
// it when the file has no such section. The rest of the file is kept byte for byte.
func writeSection(path, md string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	out, err := replaceSection(string(old), md)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

func replaceSection(doc, md string) (string, error) {
	block := beginMark + "\n" + strings.TrimRight(md, "\n") + "\n" + endMark + "\n"
	i := strings.Index(doc, beginMark)
	j := strings.Index(doc, endMark)
	switch {
	case i < 0 && j < 0:
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		return doc + block, nil
	case i < 0 || j < i:
		return "", fmt.Errorf("the side-by-side markers are unbalanced (begin at %d, end at %d)", i, j)
	}
	return doc[:i] + block + strings.TrimPrefix(doc[j+len(endMark):], "\n"), nil
}

func (rep *report) find(shape, proxy string) (row, bool) {
	for _, t := range rep.tables {
		if t.def.key != shape {
			continue
		}
		for _, r := range t.rows {
			if r.proxy == proxy && r.skip == "" && r.res.Requests > 0 {
				return r, true
			}
		}
	}
	return row{}, false
}

// ratio of a's CPU per request to b's, when both were measured.
func (rep *report) ratio(shape, a, b string) (float64, bool) {
	ra, ok1 := rep.find(shape, a)
	rb, ok2 := rep.find(shape, b)
	if !ok1 || !ok2 || rb.cpuPerReq() == 0 {
		return 0, false
	}
	return float64(ra.cpuPerReq()) / float64(rb.cpuPerReq()), true
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func (rep *report) targets() []string {
	var out []string
	add := func(target, measured, v string) {
		out = append(out, fmt.Sprintf("| %s | %s | %s |", target, measured, v))
	}
	const insp, off = "Inspector", "Inspector capture off"
	if r, ok := rep.ratio("ka-h1", insp, "martian"); ok {
		ri, _ := rep.find("ka-h1", insp)
		rm, _ := rep.find("ka-h1", "martian")
		add("keep-alive HTTPS MITM, capture + store on: CPU/req ≤ 0.6× martian, zero errors",
			fmt.Sprintf("%.2f× (%.3f ms, of it kernel %.3f), %d errors; 0.6× martian is %.3f ms, and martian's kernel time alone is %.3f ms",
				r, ms(ri.cpuPerReq()), ms(ri.kernelPerReq()), ri.res.Errors, 0.6*ms(rm.cpuPerReq()), ms(rm.kernelPerReq())),
			verdict(r <= 0.6 && ri.res.Errors == 0))
	} else {
		add("keep-alive HTTPS MITM ≤ 0.6× martian", "not measured (a run is missing)", "unknown")
	}
	if r, ok := rep.ratio("ka-h1", insp, "martian"); ok {
		add("keep-alive, capture on: CPU/req ≤ 1.0× martian (no capture)", fmt.Sprintf("%.2f×", r), verdict(r <= 1.0))
	}
	if r, ok := rep.ratio("ka-h1", insp, "martian + HAR"); ok {
		rh, _ := rep.find("ka-h1", "martian + HAR")
		add("keep-alive, capture on: CPU/req ≤ 0.8× martian with its HAR logger (a capturing peer)", fmt.Sprintf("%.2f× (martian + HAR %.3f ms)", r, ms(rh.cpuPerReq())), verdict(r <= 0.8))
	}
	if r, ok := rep.ratio("ka-h1", insp, "nginx"); ok {
		rn, _ := rep.find("ka-h1", "nginx")
		add("goal: keep-alive CPU/req ≤ nginx's TLS reverse proxy", fmt.Sprintf("%.2f× nginx (nginx %.3f ms)", r, ms(rn.cpuPerReq())), verdict(r <= 1))
	}
	if r, ok := rep.ratio("tunnel", insp, "martian"); ok {
		ri, _ := rep.find("tunnel", insp)
		add("new tunnel per request: CPU/req ≤ 0.6× martian", fmt.Sprintf("%.2f× (%.3f ms)", r, ms(ri.cpuPerReq())), verdict(r <= 0.6))
		add("goal: new tunnel per request ≤ 1.5 ms CPU", fmt.Sprintf("%.3f ms", ms(ri.cpuPerReq())), verdict(ri.cpuPerReq() <= 1500*time.Microsecond))
		add("new tunnel per request ≤ 0.35× martian (keep)", fmt.Sprintf("%.2f×", r), verdict(r <= 0.35))
	} else {
		add("new tunnel per request ≤ 0.6× martian", "not measured (a run is missing)", "unknown")
	}
	if r, ok := rep.ratio("h2-mux", insp, "nginx"); ok {
		add("h2 multiplexed 16×10: CPU/req ≤ 0.5× nginx h2", fmt.Sprintf("%.2f×", r), verdict(r <= 0.5))
	} else {
		add("h2 multiplexed ≤ 0.5× nginx h2", "not measured (a run is missing)", "unknown")
	}
	if r, ok := rep.ratio("ka-h1", insp, off); ok {
		add("capture on ÷ off ≤ 1.10 (keep-alive h1)", fmt.Sprintf("%.2f", r), verdict(r <= 1.10))
		add("capture on ÷ off ≤ 1.15 (keep-alive h1)", fmt.Sprintf("%.2f", r), verdict(r <= 1.15))
	} else {
		add("capture on ÷ off ≤ 1.10", "not measured (a run is missing)", "unknown")
	}
	for _, s := range rep.stream {
		if s.proxy == insp {
			if s.err != "" || s.skip != "" {
				add(fmt.Sprintf("%s streamed, RSS growth < 100 MB", human(rep.opts.streamBytes)), "failed: "+s.err+s.skip, "**not met**")
			} else {
				g := s.hwm - s.rssBefore
				add(fmt.Sprintf("%s streamed (capture on), RSS growth < 100 MB", human(rep.opts.streamBytes)), fmt.Sprintf("%.1f MB", float64(g)*1024/1e6), verdict(float64(g)*1024 < 100e6))
			}
		}
	}
	return out
}

func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (rep *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("## Side by side with other proxies (%s)", rep.date[:10])
	p("")
	p("- Date: %s. Machine: %s.", rep.date, rep.machine)
	p("- Command: `%s` (the second step of `make bench`); whole run %v.", rep.command, rep.total.Round(time.Second))
	p("- Placement: %s. Load average (1, 5, 15 min) before: %s, after: %s; on 2 CPUs anything above ~2 means other work shared the CPUs, which moves RPS and latency far more than CPU/req.", rep.pinning, rep.loadBefore, rep.loadAfter)
	p("- Method: a fresh proxy process per row, after a sync(2) so no row waits on the disk writes of the one before; closed-loop Go load generator (CONNECT, then TLS inside the tunnel; nginx is dialled directly), %v warm-up then a %v window; only requests completed in the window count. **CPU/req** = the proxy's utime+stime from /proc/PID/stat across the window ÷ requests (the primary figure: it holds under noise, unlike RPS). Ratio = Inspector's CPU/req ÷ this row's (below 1: Inspector is cheaper). Peak RSS = VmHWM at the end of the row's run (file-backed pages included: Inspector's bbolt file is memory-mapped); anon = RssAnon at the end (heap, stacks). Origin: Go TLS server (h1 + h2) on 127.0.0.1, tiny JSON body of 52 bytes.", rep.opts.warmup, rep.opts.duration)
	p("- Under test: %s.", strings.Join(rep.versions, "; "))
	p("- Inspector runs the real binary: `inspector --headless --listen 127.0.0.1:0 --data-dir TMP --upstream-ca ORIGIN-CA` (capture + bbolt store on, one session line per request on stdout, read by the harness), and the same with `--no-capture`.")
	for _, s := range rep.skipped {
		p("- %s", s)
	}
	if rep.h3 != "" {
		p("- %s.", rep.h3)
	} else {
		p("- HTTP/3 is measured towards the origin only (Inspector's --upstream-proto h3; the origin also serves HTTP/3 on the same port over UDP): HTTP/3 from clients needs a client that reaches a proxy without CONNECT, which none of the peers offers.")
	}
	p("")
	p("### Targets (issue \"Performance\"), ratios from this run")
	p("")
	p("| target | measured | verdict |")
	p("|---|---|---|")
	for _, l := range rep.targets() {
		p("%s", l)
	}
	for _, t := range rep.tables {
		p("")
		p("### %s", t.def.title)
		p("")
		p("| proxy | CPU/req ms | of it kernel ms | Inspector ÷ this | req/s | p50 ms | p99 ms | errors | peak RSS MiB | anon MiB |")
		p("|---|---|---|---|---|---|---|---|---|---|")
		insp, haveInsp := rep.find(t.def.key, "Inspector")
		for _, r := range t.rows {
			if r.skip != "" {
				p("| %s | skipped: %s | | | | | | | | |", r.proxy, mdEscape(r.skip))
				continue
			}
			ratio := "–"
			if haveInsp && r.cpuPerReq() > 0 {
				ratio = fmt.Sprintf("%.2f", float64(insp.cpuPerReq())/float64(r.cpuPerReq()))
			}
			errs := fmt.Sprintf("%d", r.res.Errors)
			if r.res.Errors > 0 {
				errs += " (" + mdEscape(r.res.FirstErr) + ")"
			}
			p("| %s | %.3f | %.3f | %s | %.0f | %.2f | %.2f | %s | %.0f | %.0f |", r.proxy, ms(r.cpuPerReq()), ms(r.kernelPerReq()), ratio, r.res.RPS(),
				ms(r.res.P50), ms(r.res.P99), errs, float64(r.hwmKiB)/1024, float64(r.anonKiB)/1024)
		}
	}
	if len(rep.stream) > 0 {
		p("")
		p("### %s streamed through in one GET (HTTP/1.1 to the proxy)", human(rep.opts.streamBytes))
		p("")
		p("| proxy | MB/s | CPU s | RSS before MiB | peak RSS MiB | growth MB |")
		p("|---|---|---|---|---|---|")
		for _, s := range rep.stream {
			switch {
			case s.skip != "":
				p("| %s | skipped: %s | | | | |", s.proxy, mdEscape(s.skip))
			case s.err != "":
				p("| %s | failed: %s | | | | |", s.proxy, mdEscape(s.err))
			default:
				p("| %s | %.0f | %.2f | %.0f | %.0f | %.1f |", s.proxy, float64(s.bytes)/1e6/s.took.Seconds(), s.cpu.Seconds(),
					float64(s.rssBefore)/1024, float64(s.hwm)/1024, float64(s.hwm-s.rssBefore)*1024/1e6)
			}
		}
	}
	return b.String()
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
