package contract

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/protobuf/encoding/protowire"

	"inspector/content"
	"inspector/engine/session"
)

// ProtoInferrer infers .proto files from gRPC (and gRPC-Web, Connect) traffic: services
// and methods from the paths, messages from the schemaless decoding of the messages seen.
// What the wire cannot tell is marked "// guessed" in the output. Safe for concurrent use.
type ProtoInferrer struct {
	mu       sync.Mutex
	services map[string]*protoService // full name "pkg.Service"
	stats    Stats
}

type protoService struct {
	methods map[string]*protoMethod
}

type protoMethod struct {
	count                    int
	req, resp                *protoMsg
	clientStream, serverStrm bool
}

// protoMsg folds the decoded instances of one message type.
type protoMsg struct {
	samples int
	fields  map[protowire.Number]*protoFieldAgg
}

type protoFieldAgg struct {
	present  int // instances of the message holding it
	repeated bool
	wires    map[string]int
	// len fields: how the instances looked
	strs, msgs, packed, bytes, empty int
	strsAsMsg                        int // strings that also parse as messages
	sub                              *protoMsg
	// varints and fixed
	maxVarint  uint64
	floaty     int // fixed values that read as ordinary floating-point numbers
	fixedCount int
}

func newProtoMsg() *protoMsg { return &protoMsg{fields: map[protowire.Number]*protoFieldAgg{}} }

// NewProtoInferrer returns an empty ProtoInferrer.
func NewProtoInferrer() *ProtoInferrer {
	return &ProtoInferrer{services: map[string]*protoService{}, stats: Stats{Skipped: map[string]int{}}}
}

// Add folds in one session; sessions that are not gRPC calls are skipped silently (not
// counted), those that are but cannot be read are counted as skipped.
func (p *ProtoInferrer) Add(s *session.Session) {
	method, ok := content.RPCMethod(s)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Sessions++
	svcName, mName, _ := strings.Cut(method, "/")
	svc := p.services[svcName]
	if svc == nil {
		svc = &protoService{methods: map[string]*protoMethod{}}
		p.services[svcName] = svc
	}
	m := svc.methods[mName]
	if m == nil {
		m = &protoMethod{req: newProtoMsg(), resp: newProtoMsg()}
		svc.methods[mName] = m
	}
	m.count++
	if n := p.addFrames(m.req, s.Request.Header, s.Request.Body, s.Flags.Has(session.FlagReqTruncated)); n > 1 {
		m.clientStream = true
	}
	if s.Response != nil {
		if n := p.addFrames(m.resp, s.Response.Header, s.Response.Body, s.Flags.Has(session.FlagRespTruncated)); n > 1 {
			m.serverStrm = true
		}
	}
}

func (p *ProtoInferrer) addFrames(msg *protoMsg, h map[string][]string, b session.Body, truncated bool) int {
	if truncated || b.Truncated {
		p.stats.Skipped["body truncated (over the capture limit)"]++
		return 0
	}
	kind := content.Detect(h, b.Data)
	body := b.Data
	if kind == content.KindGRPCWebText {
		dec, err := content.DecodeGRPCWebText(body)
		if err != nil {
			p.stats.Skipped["body not decodable"]++
			return 0
		}
		body, kind = dec, content.KindGRPCWeb
	}
	if kind != content.KindGRPC && kind != content.KindGRPCWeb && kind != content.KindConnect {
		kind = content.KindGRPC
	}
	frames, err := content.SplitFrames(kind, body)
	if err != nil {
		p.stats.Skipped["bad gRPC framing"]++
	}
	n := 0
	for _, f := range frames {
		if f.Trailer || f.EndStream {
			continue
		}
		if f.Compressed || f.Partial {
			p.stats.Skipped["message compressed or cut"]++
			continue
		}
		fields, err := content.DecodeProtoRaw(f.Data)
		if err != nil {
			p.stats.Skipped["message not protobuf"]++
			continue
		}
		msg.add(fields, 0)
		p.stats.Bodies++
		n++
	}
	return n
}

func (m *protoMsg) add(fields []content.ProtoField, depth int) {
	m.samples++
	seen := map[protowire.Number]int{}
	for _, f := range fields {
		seen[f.Number]++
	}
	for num, c := range seen {
		a := m.fields[num]
		if a == nil {
			a = &protoFieldAgg{wires: map[string]int{}}
			m.fields[num] = a
		}
		a.present++
		if c > 1 {
			a.repeated = true
		}
	}
	for _, f := range fields {
		a := m.fields[f.Number]
		a.wires[f.Wire]++
		switch {
		case f.Varint != nil:
			a.maxVarint = max(a.maxVarint, *f.Varint)
		case f.Fixed != nil:
			a.fixedCount++
			if f.Wire == "i64" && ordinaryFloat(math.Float64frombits(*f.Fixed)) ||
				f.Wire == "i32" && ordinaryFloat(float64(math.Float32frombits(uint32(*f.Fixed)))) {
				a.floaty++
			}
		case f.IsMessage || f.Message != nil:
			a.msgs++
			if depth < MaxDepth {
				if a.sub == nil {
					a.sub = newProtoMsg()
				}
				a.sub.add(f.Message, depth+1)
			}
		case f.String != nil && *f.String == "":
			a.empty++
		case f.String != nil:
			a.strs++
			if sub, err := content.DecodeProtoRaw([]byte(*f.String)); err == nil && len(sub) > 0 {
				a.strsAsMsg++
				if a.sub == nil {
					a.sub = newProtoMsg()
				}
				a.sub.add(sub, depth+1)
			}
		case f.Packed != nil:
			a.packed++
		default:
			a.bytes++
		}
	}
}

// ordinaryFloat: a value a program would plausibly send as a double or float (not a NaN,
// an infinity, a denormal or an astronomically large number, as integers read as floats
// mostly are).
func ordinaryFloat(f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	a := math.Abs(f)
	return a == 0 || (a > 1e-9 && a < 1e15)
}

// protoType decides a field's type and the comment that says what was guessed.
func (a *protoFieldAgg) protoType(nested func() string) (typ, note string, repeated bool) {
	repeated = a.repeated
	wire, mixed := "", false
	for w, c := range a.wires {
		if c > 0 && wire != "" && w != wire {
			mixed = true
		}
		if wire == "" || c > a.wires[wire] {
			wire = w
		}
	}
	if mixed {
		return "bytes", "guessed: seen with several wire types", repeated
	}
	switch wire {
	case "varint":
		if a.maxVarint >= 1<<63 {
			return "uint64", "guessed: could be int64 or sint64 (the wire does not tell)", repeated
		}
		return "int64", "guessed: could be int32, uint64, sint64, bool or an enum (the wire does not tell)", repeated
	case "i64":
		if a.floaty == a.fixedCount {
			return "double", "guessed: could be fixed64 or sfixed64", repeated
		}
		return "fixed64", "guessed: could be double or sfixed64", repeated
	case "i32":
		if a.floaty == a.fixedCount {
			return "float", "guessed: could be fixed32 or sfixed32", repeated
		}
		return "fixed32", "guessed: could be float or sfixed32", repeated
	case "group":
		return nested(), "a group on the wire (proto2); declared as a message", repeated
	}
	// Length-delimited.
	switch {
	case a.msgs > 0 && a.bytes == 0 && a.packed == 0 && a.strs == a.strsAsMsg && a.sub != nil:
		return nested(), "", repeated
	case a.strs > 0 && a.msgs == 0 && a.bytes == 0 && a.packed == 0:
		return "string", "", repeated
	case a.packed > 0 && a.strs == 0 && a.msgs == 0 && a.bytes == 0:
		return "int64", "guessed: packed varints (could be bytes, or packed int32/enum/bool)", true
	case a.strs == 0 && a.msgs == 0 && a.packed == 0 && a.bytes == 0:
		return "string", "guessed: only empty values seen (string or bytes)", repeated
	}
	return "bytes", "", repeated
}

// ProtoFiles renders one .proto file per package (the service name's prefix), keyed by
// file name ("demo/v1/inferred.proto").
func (p *ProtoInferrer) ProtoFiles() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	byPkg := map[string][]string{}
	for full := range p.services {
		pkg := ""
		if i := strings.LastIndex(full, "."); i >= 0 {
			pkg = full[:i]
		}
		byPkg[pkg] = append(byPkg[pkg], full)
	}
	out := map[string]string{}
	for pkg, svcs := range byPkg {
		sort.Strings(svcs)
		var b strings.Builder
		b.WriteString("// Inferred by Inspector from captured traffic. Field names are not on the wire:\n")
		b.WriteString("// fields are named by number. \"guessed\" marks what the wire cannot tell.\n")
		b.WriteString("syntax = \"proto3\";\n\n")
		if pkg != "" {
			fmt.Fprintf(&b, "package %s;\n\n", pkg)
		}
		var msgs strings.Builder
		for _, full := range svcs {
			svc := p.services[full]
			short := full[strings.LastIndex(full, ".")+1:]
			names := make([]string, 0, len(svc.methods))
			for m := range svc.methods {
				names = append(names, m)
			}
			sort.Strings(names)
			fmt.Fprintf(&b, "service %s {\n", ident(short))
			for _, mn := range names {
				m := svc.methods[mn]
				req, resp := ident(mn)+"Request", ident(mn)+"Response"
				if len(svc.methods) > 0 && len(svcs) > 1 {
					req, resp = ident(short)+req, ident(short)+resp
				}
				cs, ss := "", ""
				if m.clientStream {
					cs = "stream "
				}
				if m.serverStrm {
					ss = "stream "
				}
				fmt.Fprintf(&b, "  rpc %s(%s%s) returns (%s%s); // %d calls seen\n", ident(mn), cs, req, ss, resp, m.count)
				writeMessage(&msgs, req, m.req, 0)
				writeMessage(&msgs, resp, m.resp, 0)
			}
			b.WriteString("}\n\n")
		}
		b.WriteString(msgs.String())
		file := "inferred.proto"
		if pkg != "" {
			file = strings.ReplaceAll(pkg, ".", "/") + "/inferred.proto"
		}
		out[file] = b.String()
	}
	return out
}

func writeMessage(b *strings.Builder, name string, m *protoMsg, depth int) {
	ind := strings.Repeat("  ", depth)
	fmt.Fprintf(b, "%smessage %s { // %d messages seen\n", ind, name, m.samples)
	nums := make([]int, 0, len(m.fields))
	for n := range m.fields {
		nums = append(nums, int(n))
	}
	sort.Ints(nums)
	var nested []func()
	for _, n := range nums {
		a := m.fields[protowire.Number(n)]
		subName := fmt.Sprintf("Field%d", n)
		typ, note, rep := a.protoType(func() string {
			sub := a.sub
			if sub == nil {
				sub = newProtoMsg()
			}
			nested = append(nested, func() { writeMessage(b, subName, sub, depth+1) })
			return subName
		})
		label := ""
		if rep {
			label = "repeated "
		}
		comment := fmt.Sprintf(" // in %d of %d", a.present, m.samples)
		if note != "" {
			comment += "; " + note
		}
		fmt.Fprintf(b, "%s  %s%s field_%d = %d;%s\n", ind, label, typ, n, n, comment)
	}
	for _, f := range nested {
		f()
	}
	fmt.Fprintf(b, "%s}\n", ind)
	if depth == 0 {
		b.WriteString("\n")
	}
}

// ident makes a proto identifier of s.
func ident(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) && r < 128, r == '_', unicode.IsDigit(r) && r < 128 && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// ProtoStats reports what was taken in.
func (p *ProtoInferrer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Skipped = map[string]int{}
	for k, v := range p.stats.Skipped {
		st.Skipped[k] = v
	}
	for _, s := range p.services {
		st.Operations += len(s.methods)
	}
	return st
}
