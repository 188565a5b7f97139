package diff

import (
	"fmt"
	"strings"
)

// SideRow is one row of a side-by-side view of an exchange diff: a section title (Section
// set, nothing else), or a left and right cell. Left or Right is empty when the side has
// nothing there (an added or removed field, or line).
type SideRow struct {
	Section     string
	Left, Right string
	Op          Op
	// Kind and Field name what the row shows, for the ignore list: "header" and the
	// header's name, or "json" and the member's path; empty for other rows.
	Kind, Field string
}

// SideBySide lays the exchange diff out in two columns: the request line, headers and
// body of the request, then of the response. Equal fields are shown too (so the view
// reads like the two messages); equal text lines far from any change are folded into one
// "… N equal lines" row.
func (e *Exchange) SideBySide() []SideRow {
	var out []SideRow
	sec := func(s string) { out = append(out, SideRow{Section: s}) }
	for _, part := range []struct {
		name string
		m    *Message
	}{{"Request", &e.Request}, {"Response", &e.Response}} {
		sec(part.name)
		for _, f := range part.m.Line {
			out = append(out, fieldRow(f, ""))
		}
		if len(part.m.Headers) > 0 {
			sec(part.name + " headers")
			for _, f := range part.m.Headers {
				for _, r := range headerRows(f) {
					r.Kind, r.Field = "header", f.Name
					out = append(out, r)
				}
			}
		}
		b := part.m.Body
		if b.Kind == BodyNone {
			continue
		}
		sec(fmt.Sprintf("%s body (%s, %d → %d bytes)", part.name, b.Kind, b.SizeA, b.SizeB))
		for _, n := range b.Notes {
			out = append(out, SideRow{Left: "note: " + n, Op: OpIgnored})
		}
		switch b.Kind {
		case BodyJSON:
			if len(b.Fields) == 0 {
				out = append(out, SideRow{Left: "equal", Right: "equal", Op: OpEqual})
			}
			for _, f := range b.Fields {
				r := fieldRow(f, ": ")
				r.Kind, r.Field = "json", f.Name
				out = append(out, r)
			}
		case BodyText:
			out = append(out, lineRows(b.Lines)...)
		case BodyBinary:
			op := OpEqual
			if !b.Equal {
				op = OpChanged
			}
			out = append(out, SideRow{Left: fmt.Sprintf("%d bytes, SHA-256 %s", b.SizeA, b.SHA256A),
				Right: fmt.Sprintf("%d bytes, SHA-256 %s", b.SizeB, b.SHA256B), Op: op})
		}
	}
	return out
}

func fieldRow(f Field, sep string) SideRow {
	if sep == "" {
		sep = ": "
	}
	r := SideRow{Op: f.Op}
	if f.Op != OpAdded {
		r.Left = f.Name + sep + f.A
	}
	if f.Op != OpRemoved {
		r.Right = f.Name + sep + f.B
	}
	return r
}

// headerRows writes one row per value of a repeated field.
func headerRows(f Field) []SideRow {
	va, vb := splitVals(f.A), splitVals(f.B)
	if f.Op == OpAdded {
		va = nil
	}
	if f.Op == OpRemoved {
		vb = nil
	}
	n := max(len(va), len(vb))
	out := make([]SideRow, n)
	for i := range out {
		out[i].Op = f.Op
		if i < len(va) {
			out[i].Left = f.Name + ": " + va[i]
		}
		if i < len(vb) {
			out[i].Right = f.Name + ": " + vb[i]
		}
	}
	return out
}

func splitVals(s string) []string {
	if s == "" {
		return []string{""}
	}
	return strings.Split(s, "\n")
}

// lineRows pairs runs of removed and added lines side by side as changes; equal lines
// more than 3 away from a change fold into one row.
func lineRows(ls []Line) []SideRow {
	const ctx = 3
	near := make([]bool, len(ls))
	for i, l := range ls {
		if l.Op != OpEqual {
			for j := max(0, i-ctx); j <= min(len(ls)-1, i+ctx); j++ {
				near[j] = true
			}
		}
	}
	var out []SideRow
	for i := 0; i < len(ls); {
		l := ls[i]
		if l.Op == OpEqual {
			if !near[i] {
				j := i
				for j < len(ls) && ls[j].Op == OpEqual && !near[j] {
					j++
				}
				out = append(out, SideRow{Left: fmt.Sprintf("… %d equal lines", j-i), Right: fmt.Sprintf("… %d equal lines", j-i), Op: OpIgnored})
				i = j
				continue
			}
			out = append(out, SideRow{Left: l.Text, Right: l.Text, Op: OpEqual})
			i++
			continue
		}
		var rem, add []string
		for i < len(ls) && ls[i].Op == OpRemoved {
			rem = append(rem, ls[i].Text)
			i++
		}
		for i < len(ls) && ls[i].Op == OpAdded {
			add = append(add, ls[i].Text)
			i++
		}
		for k := 0; k < max(len(rem), len(add)); k++ {
			r := SideRow{Op: OpChanged}
			switch {
			case k >= len(rem):
				r.Op = OpAdded
			case k >= len(add):
				r.Op = OpRemoved
			}
			if k < len(rem) {
				r.Left = rem[k]
			}
			if k < len(add) {
				r.Right = add[k]
			}
			out = append(out, r)
		}
	}
	return out
}
