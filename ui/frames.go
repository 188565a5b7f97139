package ui

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
)

// FrameStore is the optional part of Store that serves HTTP/2 and HTTP/3 frames;
// *store.Store implements it. Without it the Frames tab says frames are not available.
type FrameStore interface {
	Frames(id session.ID) ([]session.Frame, error)
}

// stallGap is the pause between two DATA frames of one stream and direction, with a
// WINDOW_UPDATE in between, that the timeline marks as a flow-control stall.
const stallGap = 20 * time.Millisecond

const filterAll = "all"

// framesView is the Frames tab: the frames of the shown session on both legs, one row per
// frame, filtered by connection, stream and type. It is used on the UI goroutine only.
type framesView struct {
	u      *UI
	all    []session.Frame
	notes  []string // per frame of all: stall and reset annotations
	rows   []int    // indexes into all after filtering
	conn   *widget.Select
	stream *widget.Select
	typ    *widget.Select
	status *widget.Label
	list   *widget.List
	box    fyne.CanvasObject
}

func newFramesView(u *UI) *framesView {
	v := &framesView{u: u, status: widget.NewLabel("")}
	v.conn = widget.NewSelect([]string{filterAll}, func(string) { v.apply() })
	v.stream = widget.NewSelect([]string{filterAll}, func(string) { v.apply() })
	v.typ = widget.NewSelect([]string{filterAll}, func(string) { v.apply() })
	for _, s := range []*widget.Select{v.conn, v.stream, v.typ} {
		s.Selected = filterAll
	}
	v.list = newMonoList(func() int { return len(v.rows) }, func(i int) string { return v.rowText(v.rows[i]) }, fyne.TextTruncateClip)
	bar := container.NewHBox(widget.NewLabel("Connection"), v.conn, widget.NewLabel("Stream"), v.stream,
		widget.NewLabel("Type"), v.typ)
	v.box = container.NewBorder(container.NewVBox(bar, v.status), nil, nil, nil, v.list)
	return v
}

// connLabel names a frame's connection in the filter: "client h2 #3".
func connLabel(f *session.Frame) string {
	return fmt.Sprintf("%s %s #%d", f.Leg, f.Proto, f.ConnID)
}

// load shows the frames of session id (from the store, when it serves frames).
func (v *framesView) load(id session.ID) {
	var frames []session.Frame
	var err error
	fs, ok := v.u.deps.Store.(FrameStore)
	if ok {
		frames, err = fs.Frames(id)
	}
	v.set(frames)
	switch {
	case !ok:
		v.status.SetText("Frames are not available without the session store.")
	case err != nil:
		v.status.SetText("Frames could not be loaded: " + err.Error())
	case len(frames) == 0:
		v.status.SetText("No frames recorded: only HTTP/2 and HTTP/3 legs have frames (they are stored shortly after the session ends).")
	}
}

// set replaces the frames shown and resets the filters.
func (v *framesView) set(frames []session.Frame) {
	v.all = frames
	v.notes = annotateFrames(frames)
	conns, streams, types := map[string]bool{}, map[uint64]bool{}, map[string]bool{}
	for i := range frames {
		conns[connLabel(&frames[i])] = true
		streams[frames[i].Stream] = true
		types[frames[i].Type] = true
	}
	v.conn.Options = append([]string{filterAll}, sortedKeys(conns)...)
	var ss []uint64
	for s := range streams {
		ss = append(ss, s)
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
	v.stream.Options = []string{filterAll}
	for _, s := range ss {
		v.stream.Options = append(v.stream.Options, fmt.Sprint(s))
	}
	v.typ.Options = append([]string{filterAll}, sortedKeys(types)...)
	for _, s := range []*widget.Select{v.conn, v.stream, v.typ} {
		s.Selected = filterAll
		s.Refresh()
	}
	v.apply()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// apply recomputes the rows from the filters.
func (v *framesView) apply() {
	v.rows = v.rows[:0]
	for i := range v.all {
		f := &v.all[i]
		if v.conn.Selected != filterAll && v.conn.Selected != "" && connLabel(f) != v.conn.Selected {
			continue
		}
		if v.stream.Selected != filterAll && v.stream.Selected != "" && fmt.Sprint(f.Stream) != v.stream.Selected {
			continue
		}
		if v.typ.Selected != filterAll && v.typ.Selected != "" && f.Type != v.typ.Selected {
			continue
		}
		v.rows = append(v.rows, i)
	}
	if len(v.all) > 0 {
		v.status.SetText(fmt.Sprintf("%d of %d frames. \"in\" is received by Inspector, \"out\" sent by it.", len(v.rows), len(v.all)))
	}
	v.list.Refresh()
}

// rowText is one timeline row: time since the first frame, leg, direction, stream, type,
// flags, length, decoded payload and notes.
func (v *framesView) rowText(i int) string {
	f := &v.all[i]
	var b strings.Builder
	fmt.Fprintf(&b, "%9.3fms %-8s %-3s %s#%d s%-4d %-13s len %-6d", float64(f.Time.Sub(v.all[0].Time).Microseconds())/1000,
		f.Leg, f.Dir, f.Proto, f.ConnID, f.Stream, f.Type, f.Length)
	if f.Flags != "" {
		b.WriteString(" [" + f.Flags + "]")
	}
	if f.Detail != "" {
		b.WriteString(" " + f.Detail)
	}
	if len(f.Headers) > 0 {
		parts := make([]string, len(f.Headers))
		for j, h := range f.Headers {
			parts[j] = h.Name + ": " + h.Value
		}
		b.WriteString("  {" + strings.Join(parts, ", ") + "}")
	}
	if v.notes[i] != "" {
		b.WriteString("  ⚠ " + v.notes[i])
	}
	return b.String()
}

// annotateFrames marks who reset a stream and where DATA paused for flow control (a gap of
// at least stallGap after which DATA resumed right behind a WINDOW_UPDATE from the peer).
func annotateFrames(frames []session.Frame) []string {
	notes := make([]string, len(frames))
	type key struct {
		leg, dir string
		conn     uint64
		stream   uint64
	}
	lastData := map[key]int{}
	lastWU := map[key]time.Time{} // by leg, conn and the direction the update was received from
	for i := range frames {
		f := &frames[i]
		switch f.Type {
		case "RST_STREAM", "RESET_STREAM":
			who := map[string]string{"client in": "the client", "client out": "Inspector", "upstream in": "the origin", "upstream out": "Inspector"}[f.Leg+" "+f.Dir]
			notes[i] = "stream reset by " + who
		case "WINDOW_UPDATE":
			// An update received lets us send more, and the other way round.
			dir := "out"
			if f.Dir == "out" {
				dir = "in"
			}
			lastWU[key{f.Leg, dir, f.ConnID, 0}] = f.Time
		case "DATA":
			k := key{f.Leg, f.Dir, f.ConnID, f.Stream}
			if j, ok := lastData[k]; ok {
				gap := f.Time.Sub(frames[j].Time)
				wu := lastWU[key{f.Leg, f.Dir, f.ConnID, 0}]
				if gap >= stallGap && wu.After(frames[j].Time) && !wu.After(f.Time) {
					notes[i] = fmt.Sprintf("flow-control stall: %s without DATA until a WINDOW_UPDATE", gap.Round(time.Millisecond))
				}
			}
			lastData[k] = i
		}
	}
	return notes
}

// wsOpName names a WebSocket opcode for the WebSocket tab.
func wsOpName(op int) string {
	switch op {
	case 0:
		return "cont"
	case 1:
		return "text"
	case 2:
		return "binary"
	case 8:
		return "close"
	case 9:
		return "ping"
	case 10:
		return "pong"
	}
	return fmt.Sprintf("op=%d", op)
}

// wsPayload shows a message's payload: text as text, binary as hex, a close frame's code
// and reason; long ones are cut.
func wsPayload(m session.Message) string {
	const max = 200
	d := m.Data
	switch {
	case m.Opcode == 8 && len(d) >= 2:
		s := fmt.Sprintf("code %d", int(d[0])<<8|int(d[1]))
		if len(d) > 2 {
			s += " " + strconv.Quote(string(d[2:]))
		}
		return s
	case m.Opcode == 2 || !utf8.Valid(d):
		if len(d) > max/2 {
			return hex.EncodeToString(d[:max/2]) + "…"
		}
		return hex.EncodeToString(d)
	case len(d) > max:
		return string(d[:max]) + "…"
	}
	return string(d)
}
