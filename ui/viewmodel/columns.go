package viewmodel

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"inspector/content"
	"inspector/engine/session"
)

// Column identifies a session-list column.
type Column int

// The session-list columns, in their default order.
const (
	ColID Column = iota
	ColStatus
	ColProto
	ColMethod
	ColHost
	ColPath
	ColType
	ColReqSize
	ColRespSize
	ColDuration
	ColStarted
	// ColProcess is the local process that made the client connection (name, or its PID
	// when only that is known); empty when unknown.
	ColProcess
	// ColOperation is the GraphQL operation or gRPC / Connect method (content.Operation);
	// hidden by default.
	ColOperation
	// ColModel and ColTokens are an LLM call's model and its input → output tokens
	// (content.LLMCallOf), filled in by the window from the full session; hidden by
	// default.
	ColModel
	ColTokens
	NumColumns
)

// ColumnInfo describes a column for display.
type ColumnInfo struct {
	Key   string  // stable name used to persist choices ("id", "status", …)
	Title string  // header text
	Width float32 // preferred width in Fyne units (the compact density)
	Flex  bool    // takes a share of the width left over (StretchWidths)
	Right bool    // numbers: aligned right
	// Hidden columns are off until the user shows them (View ▸ Columns).
	Hidden bool
}

// Columns lists every column, indexed by Column.
var Columns = [NumColumns]ColumnInfo{
	ColID:        {Key: "id", Title: "#", Width: 52, Right: true},
	ColStatus:    {Key: "status", Title: "Status", Width: 50},
	ColProto:     {Key: "proto", Title: "Proto", Width: 50},
	ColMethod:    {Key: "method", Title: "Method", Width: 72}, // OPTIONS whole
	ColHost:      {Key: "host", Title: "Host", Width: 150, Flex: true},
	ColPath:      {Key: "path", Title: "Path", Width: 260, Flex: true},
	ColType:      {Key: "type", Title: "Type", Width: 100},
	ColReqSize:   {Key: "req", Title: "Req", Width: 52, Right: true},
	ColRespSize:  {Key: "resp", Title: "Resp", Width: 58, Right: true},
	ColDuration:  {Key: "dur", Title: "Duration", Width: 70, Right: true},
	ColStarted:   {Key: "start", Title: "Start", Width: 92},
	ColProcess:   {Key: "process", Title: "Process", Width: 72},
	ColOperation: {Key: "op", Title: "Operation", Width: 160, Hidden: true},
	ColModel:     {Key: "model", Title: "Model", Width: 130, Hidden: true},
	ColTokens:    {Key: "tokens", Title: "Tokens", Width: 90, Right: true, Hidden: true},
}

// SummaryOperation is the operation of a row as far as its summary tells: the method of
// a gRPC / Connect call (its path), the operation of a GraphQL GET (its query). A
// GraphQL POST needs the body: the window fills it in from the full session
// (content.Operation) when it has one.
func SummaryOperation(s *session.Summary) string {
	if k, _ := content.KindOfType(content.MediaType(s.ContentType)); k == content.KindGRPC || k == content.KindGRPCWeb ||
		k == content.KindGRPCWebText || k == content.KindConnect {
		p, _, _ := strings.Cut(s.Path, "?")
		return strings.TrimPrefix(p, "/")
	}
	if q, name, _, ok := content.GraphQLGET(s.URL); ok {
		typ := "query"
		if t := strings.TrimSpace(q); strings.HasPrefix(t, "mutation") || strings.HasPrefix(t, "subscription") {
			typ, _, _ = strings.Cut(t, " ")
			typ, _, _ = strings.Cut(typ, "{")
		}
		if name != "" {
			return typ + " " + name
		}
		return typ
	}
	return ""
}

// HostKey is a row's host as the host tree groups it: the host name, with the port when
// the URL names one that is not its scheme's default, so two services on one host
// (localhost:3000 and localhost:8080) are two hosts.
func HostKey(s *session.Summary) string {
	rest, ok := strings.CutPrefix(s.URL, "https://")
	def := "443"
	if !ok {
		if rest, ok = strings.CutPrefix(s.URL, "http://"); !ok {
			return s.Host
		}
		def = "80"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 || i < strings.LastIndexByte(rest, ']') {
		return s.Host
	}
	port := rest[i+1:]
	if port == "" || port == def {
		return s.Host
	}
	if strings.Contains(s.Host, ":") { // IPv6
		return "[" + s.Host + "]:" + port
	}
	return s.Host + ":" + port
}

// ColumnByKey returns the column with the given Key.
func ColumnByKey(key string) (Column, bool) {
	for i, c := range Columns {
		if c.Key == key {
			return Column(i), true
		}
	}
	return 0, false
}

// Class is the colour class of a row's status.
type Class int

// Status classes. ClassError covers failed exchanges and failed handshakes.
const (
	ClassInFlight Class = iota
	ClassInfo           // 1xx
	ClassSuccess        // 2xx
	ClassRedirect       // 3xx
	ClassClient         // 4xx
	ClassServer         // 5xx
	ClassError          // no response because of an error, or a failed handshake
	ClassOther          // complete without status (tunnels)
)

// StatusClass classifies s for colouring.
func StatusClass(s *session.Summary) Class {
	switch {
	case s.Error != "" || s.Flags.Has(session.FlagHandshakeFailed):
		return ClassError
	case s.InFlight && s.Status == 0:
		return ClassInFlight
	case s.Status >= 100 && s.Status < 200:
		return ClassInfo
	case s.Status >= 200 && s.Status < 300:
		return ClassSuccess
	case s.Status >= 300 && s.Status < 400:
		return ClassRedirect
	case s.Status >= 400 && s.Status < 500:
		return ClassClient
	case s.Status >= 500:
		return ClassServer
	}
	return ClassOther
}

// ShortProto abbreviates a protocol name for the list: h1, h2, h3.
func ShortProto(p string) string {
	switch p {
	case session.HTTP1, "HTTP/1.1", "HTTP/1.0", "http/1.0":
		return "h1"
	case "":
		return "–"
	}
	return p
}

// CellText is the text of column c for row s.
func CellText(s *session.Summary, c Column) string {
	switch c {
	case ColID:
		if s.Mark != "" {
			return "★ " + strconv.FormatUint(uint64(s.ID), 10)
		}
		return strconv.FormatUint(uint64(s.ID), 10)
	case ColStatus:
		switch {
		case s.Status != 0:
			return strconv.Itoa(s.Status)
		case s.Flags.Has(session.FlagHandshakeFailed):
			return "TLS ✗"
		case s.Error != "":
			return "ERR"
		case s.InFlight:
			return "…"
		case s.Flags.Has(session.FlagTunnel):
			return "tunnel"
		}
		return "–"
	case ColProto:
		cp, up := ShortProto(s.ClientProto), ShortProto(s.UpstreamProto)
		if s.UpstreamProto == "" || cp == up {
			return cp
		}
		return cp + "→" + up
	case ColMethod:
		return s.Method
	case ColHost:
		return s.Host
	case ColPath:
		return s.Path
	case ColType:
		t, _, _ := strings.Cut(s.ContentType, ";")
		return strings.TrimSpace(t)
	case ColReqSize:
		return FormatBytes(s.ReqBytes)
	case ColRespSize:
		if s.InFlight && s.RespBytes == 0 {
			return ""
		}
		return FormatBytes(s.RespBytes)
	case ColDuration:
		if s.InFlight {
			return "…"
		}
		return FormatMillis(s.DurationMS)
	case ColStarted:
		if s.Started.IsZero() {
			return ""
		}
		return s.Started.Local().Format("15:04:05.000")
	case ColProcess:
		switch {
		case s.Process != "":
			return s.Process
		case s.PID != 0:
			return "pid " + strconv.Itoa(s.PID)
		}
		return ""
	case ColOperation:
		return SummaryOperation(s)
	}
	return ""
}

// FormatBytes renders a byte count the way the list and headless output do: 512B, 1.2kB, 3.4MB.
func FormatBytes(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1000*1000:
		return fmt.Sprintf("%.1fkB", float64(n)/1000)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1fMB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1fGB", float64(n)/1e9)
}

// FormatMillis renders a duration given in milliseconds: 35ms, 1.20s.
func FormatMillis(ms float64) string {
	switch {
	case ms <= 0:
		return "0ms"
	case ms < 10:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	}
	return (time.Duration(ms * float64(time.Millisecond))).Round(10 * time.Millisecond).String()
}

// less orders a before b by column c (ties are broken by ID by the caller).
// It returns -1, 0 or +1.
func compare(a, b *session.Summary, c Column) int {
	switch c {
	case ColID:
		return cmpOrdered(a.ID, b.ID)
	case ColStatus:
		return cmpOrdered(a.Status, b.Status)
	case ColProto:
		return strings.Compare(CellText(a, ColProto), CellText(b, ColProto))
	case ColMethod:
		return strings.Compare(a.Method, b.Method)
	case ColHost:
		return strings.Compare(a.Host, b.Host)
	case ColPath:
		return strings.Compare(a.Path, b.Path)
	case ColType:
		return strings.Compare(a.ContentType, b.ContentType)
	case ColReqSize:
		return cmpOrdered(a.ReqBytes, b.ReqBytes)
	case ColRespSize:
		return cmpOrdered(a.RespBytes, b.RespBytes)
	case ColDuration:
		return cmpOrdered(a.DurationMS, b.DurationMS)
	case ColStarted:
		return a.Started.Compare(b.Started)
	case ColProcess:
		if c := strings.Compare(a.Process, b.Process); c != 0 {
			return c
		}
		return cmpOrdered(a.PID, b.PID)
	case ColOperation:
		return strings.Compare(SummaryOperation(a), SummaryOperation(b))
	}
	return 0
}

func cmpOrdered[T int | int64 | float64 | session.ID](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// StretchWidths lays out columns across total: each gets its preferred width, and the
// space left over goes to the flexible ones in proportion to their preferred widths
// (the columns stretch to the window). When the preferred widths do not fit, every
// column shrinks in proportion.
func StretchWidths(pref []float32, flex []bool, total float32) []float32 {
	out := make([]float32, len(pref))
	var sum, flexSum float32
	for i, w := range pref {
		sum += w
		if flex[i] {
			flexSum += w
		}
	}
	if sum <= 0 {
		return out
	}
	if total <= sum || flexSum == 0 {
		scale := total / sum
		if total > sum {
			scale = 1
		}
		for i, w := range pref {
			out[i] = w * scale
		}
		return out
	}
	extra := total - sum
	for i, w := range pref {
		out[i] = w
		if flex[i] {
			out[i] += extra * w / flexSum
		}
	}
	return out
}
