package fingerprint

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// H2Opening is what the client of an HTTP/2 connection sent before its first request's
// headers ended: the parts of the Akamai fingerprint (SETTINGS|WINDOW_UPDATE|PRIORITY|
// pseudo-header order) and the header names of that first request, in order.
type H2Opening struct {
	Settings     []http2.Setting // in wire order, of the first SETTINGS frame
	WindowUpdate uint32          // the connection's WINDOW_UPDATE increment (0: none)
	Priorities   []Priority      // PRIORITY frames before the first HEADERS
	// HeadersPriority is the priority field of the first HEADERS frame (nil: none).
	HeadersPriority *Priority
	Pseudo          []string // the first request's pseudo-headers, in order (":method", …)
	Headers         []string // its regular header names, in order
}

// Priority is one PRIORITY frame (or a HEADERS frame's priority field).
type Priority struct {
	Stream    uint32
	Exclusive bool
	DependsOn uint32
	Weight    uint8 // as on the wire (the weight minus one)
}

// ErrNoHeaders is returned when the bytes end before the first request's headers do.
var ErrNoHeaders = errors.New("HTTP/2 opening incomplete: no complete HEADERS yet")

// ParseH2Opening parses the client side of an HTTP/2 connection from its start: the
// connection preface, then frames up to the end of the first HEADERS block.
func ParseH2Opening(b []byte) (*H2Opening, error) {
	if !bytes.HasPrefix(b, []byte(http2.ClientPreface)) {
		if len(b) < len(http2.ClientPreface) && bytes.HasPrefix([]byte(http2.ClientPreface), b) {
			return nil, ErrNoHeaders
		}
		return nil, errors.New("not an HTTP/2 client preface")
	}
	fr := http2.NewFramer(nil, bytes.NewReader(b[len(http2.ClientPreface):]))
	fr.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	fr.MaxHeaderListSize = 1 << 20
	o := &H2Opening{}
	gotSettings := false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				return nil, fmt.Errorf("HTTP/2 opening: %w", err)
			}
			return nil, ErrNoHeaders
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !gotSettings && !f.IsAck() {
				gotSettings = true
				_ = f.ForeachSetting(func(s http2.Setting) error {
					o.Settings = append(o.Settings, s)
					return nil
				})
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 && o.WindowUpdate == 0 {
				o.WindowUpdate = f.Increment
			}
		case *http2.PriorityFrame:
			o.Priorities = append(o.Priorities, Priority{f.StreamID, f.Exclusive, f.StreamDep, f.Weight})
		case *http2.MetaHeadersFrame:
			if f.HasPriority() {
				p := f.Priority
				o.HeadersPriority = &Priority{f.StreamID, p.Exclusive, p.StreamDep, p.Weight}
			}
			for _, hf := range f.Fields {
				if strings.HasPrefix(hf.Name, ":") {
					o.Pseudo = append(o.Pseudo, hf.Name)
				} else {
					o.Headers = append(o.Headers, hf.Name)
				}
			}
			return o, nil
		}
	}
}

// Akamai returns the HTTP/2 fingerprint in Akamai's format: SETTINGS as id:value joined
// by ';', the WINDOW_UPDATE increment (00 when none), the PRIORITY frames as
// stream:exclusive:dependency:weight joined by ',' (0 when none), and the pseudo-header
// order as first letters (m,a,s,p).
func (o *H2Opening) Akamai() string {
	var b strings.Builder
	for i, s := range o.Settings {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(strconv.Itoa(int(s.ID)))
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(uint64(s.Val), 10))
	}
	b.WriteByte('|')
	if o.WindowUpdate == 0 {
		b.WriteString("00")
	} else {
		b.WriteString(strconv.FormatUint(uint64(o.WindowUpdate), 10))
	}
	b.WriteByte('|')
	if len(o.Priorities) == 0 {
		b.WriteByte('0')
	}
	for i, p := range o.Priorities {
		if i > 0 {
			b.WriteByte(',')
		}
		ex := 0
		if p.Exclusive {
			ex = 1
		}
		fmt.Fprintf(&b, "%d:%d:%d:%d", p.Stream, ex, p.DependsOn, int(p.Weight)+1)
	}
	b.WriteByte('|')
	for i, p := range o.Pseudo {
		if i > 0 {
			b.WriteByte(',')
		}
		if len(p) > 1 {
			b.WriteByte(p[1])
		}
	}
	return b.String()
}
