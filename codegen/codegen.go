// Package codegen renders recorded requests as code that sends them again: shell
// commands (curl, wget, HTTPie, PowerShell) and programs (JavaScript fetch, Node,
// Python requests and httpx, Go, Java, C#, PHP, Rust).
//
// # Contract
//
// Every generator keeps the method, the header fields (repeated ones as repeated lines
// where the target library can send them; see Notes) and the body byte for byte. What it
// changes, the same way for every language:
//
//   - hop-by-hop and connection-specific fields are dropped (Connection and the fields it
//     names, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade, HTTP2-Settings,
//     Expect), and Host and Content-Length, which the client computes from the URL and the
//     body; HTTP/2 pseudo-headers too;
//   - several Cookie fields (HTTP/2 cookie crumbs) become one, joined with "; ";
//   - a header name that is not an RFC 9110 token is dropped (no client can send it);
//     CR and LF in a value become one space each and other control bytes except tab are
//     removed (a recorded value can only hold them through a crafted HAR file; kept, they
//     would split the header in two); leading and trailing blanks are trimmed, as every
//     recipient trims them;
//   - a method that is not a token loses its non-token bytes (empty becomes GET);
//   - the URL is written in its ASCII form: the host as IDNA Punycode, every byte of path
//     and query outside unreserved, sub-delims (except the quote), ":", "@", "/", "?" and
//     valid "%XX" escapes percent-encoded, escaped unreserved characters decoded (clients
//     disagree on those) and other escapes upper-cased; the fragment, never sent, is
//     dropped.
//
// Every value is written as a string literal of the target language (or one argument of a
// POSIX shell), escaped so that nothing in a request can end the literal: a crafted
// request never runs code in the snippet. Binary bodies are written as base64 (or escaped
// byte literals) decoded at run time.
//
// Generate and GenerateMany are safe for concurrent use.
package codegen

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/idna"

	"inspector/engine/session"
	"inspector/internal/textual"
)

// Langs lists the languages in the order menus show them.
var Langs = []string{"curl", "wget", "httpie", "powershell", "fetch", "node", "python", "httpx", "go", "java", "csharp", "php", "rust"}

// Titles are the names menus show for Langs.
var Titles = map[string]string{
	"curl": "curl", "wget": "Wget", "httpie": "HTTPie", "powershell": "PowerShell (Invoke-WebRequest)",
	"fetch": "JavaScript (fetch)", "node": "Node.js (node:http)", "python": "Python (requests)",
	"httpx": "Python (httpx)", "go": "Go (net/http)", "java": "Java (HttpClient)",
	"csharp": "C# (HttpClient)", "php": "PHP (curl)", "rust": "Rust (reqwest)",
}

// Notes says, per language, where the snippet cannot keep the request exactly.
var Notes = map[string]string{
	"wget":       "wget replaces a header given twice, so repeated fields are joined with \", \"",
	"httpie":     "HTTPie sends only UTF-8 header values: other fields are left out",
	"powershell": "-Headers is a hashtable, so repeated fields are joined",
	"fetch":      "Headers joins repeated fields; a browser refuses forbidden names (Cookie, User-Agent, …) and adds its own; GET and HEAD cannot carry a body",
	"python":     "requests keeps one value per name, so repeated fields are joined",
	"csharp":     "HttpClient joins repeated fields and refuses header values outside ASCII: such fields are left out; System.Uri may write %27 as '",
	"java":       "HttpClient writes header values in US-ASCII (other bytes become '?')",
}

// ErrUnknownLang is returned for a language not in Langs.
var ErrUnknownLang = errors.New("unknown language")

// Header is one header line.
type Header struct{ Name, Value string }

// Request is a request prepared for generation (see the package comment for what
// preparation changes).
type Request struct {
	Method  string
	URL     string
	Headers []Header // in name order, repeated values in their order
	Body    []byte
}

// Text reports whether the body reads as text: valid UTF-8 without control characters
// other than tab, CR and LF.
func (r *Request) Text() bool { return isText(r.Body) }

// hopByHop are the fields no generator copies.
var hopByHop = map[string]bool{
	"connection": true, "proxy-connection": true, "keep-alive": true, "proxy-authenticate": true,
	"proxy-authorization": true, "te": true, "trailer": true, "transfer-encoding": true, "upgrade": true,
	"host": true, "content-length": true, "expect": true, "http2-settings": true,
}

// Prepare applies the package's normalisation to r.
func Prepare(r *session.Request) *Request {
	p := &Request{Method: cleanMethod(r.Method), URL: cleanURL(r.URL), Body: r.Body.Data}
	drop := map[string]bool{}
	for _, v := range r.Header.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			drop[strings.ToLower(strings.TrimSpace(f))] = true
		}
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		lk := strings.ToLower(k)
		if hopByHop[lk] || drop[lk] || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		if lk == "cookie" && len(r.Header[k]) > 1 {
			// one Cookie field (RFC 6265 5.4; HTTP/2 splits it into crumbs, RFC 9113
			// 8.2.3, which are joined again for HTTP/1.1)
			vs := make([]string, len(r.Header[k]))
			for i, v := range r.Header[k] {
				vs[i] = cleanValue(v)
			}
			p.Headers = append(p.Headers, Header{k, strings.Join(vs, "; ")})
			continue
		}
		for _, v := range r.Header[k] {
			p.Headers = append(p.Headers, Header{k, cleanValue(v)})
		}
	}
	return p
}

func cleanMethod(m string) string {
	m = strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && httpguts.IsTokenRune(r) {
			return r
		}
		return -1
	}, m)
	if m == "" {
		return http.MethodGet
	}
	return m
}

func cleanValue(v string) string {
	b := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ { // bytewise: a value may hold any octet (obs-text)
		switch c := v[i]; {
		case c == '\r' || c == '\n':
			b = append(b, ' ')
		case c == '\t':
			b = append(b, c)
		case c < 0x20 || c == 0x7f:
		default:
			b = append(b, c)
		}
	}
	return strings.Trim(string(b), " \t")
}

// cleanURL writes u in ASCII (see the package comment). A string that is no URL at all is
// escaped the same way and kept.
func cleanURL(u string) string {
	u, _, _ = strings.Cut(u, "#")
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?") {
		return escapeURLPart(u)
	}
	auth, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		auth, tail = rest[:i], rest[i:]
	}
	userinfo, hostport := "", auth
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		userinfo, hostport = auth[:i+1], auth[i+1:]
	}
	host, port := hostport, ""
	if !strings.HasPrefix(hostport, "[") {
		if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
			host, port = hostport[:i], hostport[i:]
		}
	}
	if h, err := idna.Lookup.ToASCII(host); err == nil {
		host = h
	} else if a, err := idna.Punycode.ToASCII(host); err == nil {
		host = a
	}
	if uh, err := url.PathUnescape(userinfo); err == nil {
		userinfo = escapeUserinfo(uh)
	}
	return strings.ToLower(escapeURLPart(scheme)) + "://" + userinfo + escapeAuthority(host+port) + escapeURLPart(tail)
}

func escapeUserinfo(s string) string {
	if s == "" {
		return ""
	}
	s = strings.TrimSuffix(s, "@")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || c == ':' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String() + "@"
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// escapeURLPart percent-encodes every byte outside unreserved, sub-delims without the
// quote, ":", "@", "/", "?", "[", "]" (IPv6 hosts only reach here through the authority)
// and valid escapes.
func escapeURLPart(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isUnreserved(c) || strings.IndexByte("!$&()*+,;=:@/?", c) >= 0:
			b.WriteByte(c)
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			// an escaped unreserved character is that character (RFC 3986 6.2.2.2), and
			// clients differ on whether they decode it; other escapes stay, upper-cased
			if d := unhex(s[i+1])<<4 | unhex(s[i+2]); isUnreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteString(strings.ToUpper(s[i : i+3]))
			}
			i += 2
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// escapeAuthority is escapeURLPart that also keeps the brackets of an IPv6 literal.
func escapeAuthority(s string) string {
	var b strings.Builder
	for _, part := range strings.SplitAfter(s, "]") {
		pre, post, ok := strings.Cut(part, "[")
		b.WriteString(escapeURLPart(pre))
		if ok {
			b.WriteString("[" + escapeURLPart(strings.TrimSuffix(post, "]")))
			if strings.HasSuffix(post, "]") {
				b.WriteString("]")
			}
		}
	}
	return b.String()
}

func isText(d []byte) bool { return textual.IsText(d) }

// generator writes a program for one or more requests: head, then one block per request
// (each preceded by a comment line when there are several), then tail.
type generator struct {
	head    func(ps []*Request) string // imports, set-up; may be nil
	block   func(p *Request) string    // sends one request; lines end in "\n"
	tail    string
	comment string // line comment with the indentation of a block: "# ", "\t// "
}

var generators = map[string]generator{}

func register(lang string, g generator) { generators[lang] = g }

// Generate renders r as code in lang.
func Generate(lang string, r *session.Request) (string, error) {
	return GenerateMany(lang, []*session.Request{r})
}

// GenerateMany renders several requests as one snippet in lang, sent in order.
func GenerateMany(lang string, rs []*session.Request) (string, error) {
	g, ok := generators[lang]
	if !ok {
		return "", fmt.Errorf("%w %q (one of %s)", ErrUnknownLang, lang, strings.Join(Langs, ", "))
	}
	ps := make([]*Request, len(rs))
	for i, r := range rs {
		ps[i] = Prepare(r)
	}
	var b strings.Builder
	if g.head != nil {
		b.WriteString(g.head(ps))
	}
	for i, p := range ps {
		if len(ps) > 1 {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%srequest %d of %d\n", g.comment, i+1, len(ps))
		}
		b.WriteString(g.block(p))
	}
	b.WriteString(g.tail)
	return b.String(), nil
}

// joined returns the headers with repeated names joined into one field (", ", or "; "
// for Cookie), in the order of first appearance, for libraries that keep one value per
// name.
func joined(hs []Header) []Header {
	var out []Header
	idx := map[string]int{}
	for _, h := range hs {
		lk := strings.ToLower(h.Name)
		if i, ok := idx[lk]; ok {
			sep := ", "
			if lk == "cookie" {
				sep = "; "
			}
			out[i].Value += sep + h.Value
			continue
		}
		idx[lk] = len(out)
		out = append(out, h)
	}
	return out
}
