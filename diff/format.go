package diff

import (
	"fmt"
	"io"
	"strings"
)

// opMark is the one-character mark of an Op in text output.
func opMark(op Op) string {
	switch op {
	case OpAdded:
		return "+"
	case OpRemoved:
		return "-"
	case OpChanged:
		return "~"
	case OpIgnored:
		return "·"
	}
	return " "
}

// WriteText prints the exchange diff for people: only what differs (ignored fields marked
// with ·), then a count.
func (e *Exchange) WriteText(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("Compare #%d with #%d\n", e.A, e.B)
	for _, part := range []struct {
		name string
		m    *Message
	}{{"request", &e.Request}, {"response", &e.Response}} {
		p("\n%s\n", part.name)
		for _, f := range part.m.Line {
			writeField(w, f)
		}
		for _, f := range part.m.Headers {
			writeField(w, f)
		}
		b := part.m.Body
		switch {
		case b.Kind == BodyNone:
		case b.Equal && b.Kind != BodyJSON:
			p("  = body (%s, %d bytes) equal\n", b.Kind, b.SizeA)
		case b.Kind == BodyJSON:
			p("  body (json, %d → %d bytes)%s\n", b.SizeA, b.SizeB, map[bool]string{true: " equal"}[b.Equal])
			for _, f := range b.Fields {
				writeField(w, f)
			}
		case b.Kind == BodyText:
			p("  body (text, %d → %d bytes)\n", b.SizeA, b.SizeB)
			writeLines(w, b.Lines)
		case b.Kind == BodyBinary:
			p("  ~ body (binary): %d bytes sha256 %.16s… → %d bytes sha256 %.16s…\n", b.SizeA, b.SHA256A, b.SizeB, b.SHA256B)
		}
		for _, n := range b.Notes {
			p("  note: %s\n", n)
		}
	}
	if e.Equal {
		p("\nequal (%d ignored)\n", e.Ignored)
	} else {
		p("\n%d changes, %d ignored\n", e.Changes, e.Ignored)
	}
	return nil
}

func writeField(w io.Writer, f Field) {
	one := func(s string) string { return strings.ReplaceAll(s, "\n", " | ") }
	switch f.Op {
	case OpEqual:
	case OpAdded:
		fmt.Fprintf(w, "  + %s: %s\n", f.Name, one(f.B))
	case OpRemoved:
		fmt.Fprintf(w, "  - %s: %s\n", f.Name, one(f.A))
	default:
		fmt.Fprintf(w, "  %s %s: %s → %s\n", opMark(f.Op), f.Name, one(f.A), one(f.B))
	}
}

// writeLines prints changed lines with up to 2 lines of context around them.
func writeLines(w io.Writer, ls []Line) {
	const ctx = 2
	show := make([]bool, len(ls))
	for i, l := range ls {
		if l.Op != OpEqual {
			for j := max(0, i-ctx); j <= min(len(ls)-1, i+ctx); j++ {
				show[j] = true
			}
		}
	}
	last := -1
	for i, l := range ls {
		if !show[i] {
			continue
		}
		if last >= 0 && i > last+1 {
			fmt.Fprintf(w, "    …\n")
		}
		last = i
		fmt.Fprintf(w, "  %s %s\n", opMark(l.Op), l.Text)
	}
}

// WriteText prints the recording diff: the summary line, then each difference.
func (r *Recording) WriteText(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("A: %s (%d calls)\nB: %s (%d calls)\n%s\n", r.A, r.Summary.CallsA, r.B, r.Summary.CallsB, r.SummaryLine())
	for _, row := range r.LayoutRows() {
		switch row.Kind {
		case "missing":
			p("- A#%d %s %s  %d  (only in A)\n", row.A.Index+1, row.A.Method, row.A.URL, row.A.Status)
		case "new":
			p("+ B#%d %s %s  %d  (only in B)\n", row.B.Index+1, row.B.Method, row.B.URL, row.B.Status)
		case "changed", "slower":
			pr := row.Pair
			p("~ A#%d B#%d %s %s\n", pr.A.Index+1, pr.B.Index+1, pr.B.Method, pr.B.URL)
			for _, c := range pr.Changes {
				p("    %s\n", c)
			}
			if pr.Slower {
				p("    slower: %.0fms → %.0fms\n", pr.A.Duration, pr.B.Duration)
			}
		}
	}
	if len(r.ContractDrift) > 0 {
		p("contract drift (%d):\n", len(r.ContractDrift))
		for _, d := range r.ContractDrift {
			p("  %s\n", d)
		}
	}
	return nil
}
