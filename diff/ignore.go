package diff

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"inspector/internal/atomicfile"
)

// IgnoreFile is the name of the ignore list in the data directory.
const IgnoreFile = "diff-ignore.json"

// Rules name volatile fields: differences in them are reported as ignored (shown greyed),
// never as changes.
type Rules struct {
	// Headers are header names, case-insensitive; a trailing * matches any suffix
	// ("X-B3-*").
	Headers []string `json:"headers,omitempty"`
	// JSON are paths into JSON bodies: $ the root, .key or ["key"] a member, [N] an
	// element, [*] any element, .* any member, and ..key a member at any depth ($..id).
	// Keys compare case-insensitively.
	JSON []string `json:"json,omitempty"`
}

// IgnoreConfig is the content of DATA_DIR/diff-ignore.json: rules for every host, and
// more per host (the request's host name, without port).
type IgnoreConfig struct {
	Default Rules            `json:"default"`
	Hosts   map[string]Rules `json:"hosts,omitempty"`
}

// DefaultIgnore is what a data directory without diff-ignore.json uses: dates, request and
// trace ids, tokens and nonces.
func DefaultIgnore() *IgnoreConfig {
	return &IgnoreConfig{Default: Rules{
		Headers: []string{"Date", "Expires", "Last-Modified", "Age", "ETag", "Set-Cookie", "Cookie", "Authorization",
			"X-Request-Id", "X-Correlation-Id", "Request-Id", "X-Amzn-Trace-Id", "X-Amzn-RequestId", "X-Amz-Cf-Id",
			"X-Amz-Request-Id", "X-Amz-Id-2", "CF-Ray", "Traceparent", "Tracestate", "X-B3-*", "X-Trace-Id",
			"X-Runtime", "X-Response-Time", "Server-Timing", "X-CSRF-Token", "X-XSRF-Token", "Nonce", "X-Nonce", "Report-To", "NEL"},
		JSON: []string{"$..timestamp", "$..ts", "$..time", "$..date", "$..now", "$..created_at", "$..createdAt",
			"$..updated_at", "$..updatedAt", "$..expires_at", "$..expiresAt", "$..request_id", "$..requestId",
			"$..trace_id", "$..traceId", "$..nonce", "$..token", "$..access_token", "$..accessToken",
			"$..refresh_token", "$..refreshToken", "$..id_token", "$..csrf", "$..csrf_token", "$..csrfToken", "$..etag"},
	}}
}

// LoadIgnore reads DATA_DIR/diff-ignore.json; without the file it returns DefaultIgnore.
// A file that is not a valid ignore list is an error naming the problem (the file is left
// as it is).
func LoadIgnore(dataDir string) (*IgnoreConfig, error) {
	path := filepath.Join(dataDir, IgnoreFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return DefaultIgnore(), nil
	}
	if err != nil {
		return nil, err
	}
	return ParseIgnore(b, path)
}

// ParseIgnore reads an ignore list; name labels errors.
func ParseIgnore(b []byte, name string) (*IgnoreConfig, error) {
	var c IgnoreConfig
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: not a diff ignore list: %w", name, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

// Validate checks every JSON path parses.
func (c *IgnoreConfig) Validate() error {
	check := func(where string, r Rules) error {
		for _, p := range r.JSON {
			if _, err := parsePattern(p); err != nil {
				return fmt.Errorf("%s: JSON path %q: %w", where, p, err)
			}
		}
		for _, h := range r.Headers {
			if strings.TrimSpace(h) == "" {
				return fmt.Errorf("%s: empty header name", where)
			}
		}
		return nil
	}
	if err := check("default", c.Default); err != nil {
		return err
	}
	for h, r := range c.Hosts {
		if err := check("host "+strconv.Quote(h), r); err != nil {
			return err
		}
	}
	return nil
}

// Add puts a header name (kind "header") or JSON path (kind "json"; element indexes
// become [*], so $.items[3].price ignores the price of every item) on host's rules, unless
// they already ignore it. It reports whether the list changed.
func (c *IgnoreConfig) Add(host, kind, name string) (bool, error) {
	host = strings.ToLower(host)
	m := c.For(host)
	r := c.Hosts[host]
	switch kind {
	case "header":
		if m.Header(name) {
			return false, nil
		}
		r.Headers = append(r.Headers, name)
	case "json":
		p := GeneralPath(name)
		segs, err := parsePattern(p)
		if err != nil {
			return false, fmt.Errorf("JSON path %q: %w", name, err)
		}
		if m.path(segs) && !slices.ContainsFunc(segs, func(s seg) bool { return s.any }) {
			return false, nil
		}
		if slices.Contains(r.JSON, p) {
			return false, nil
		}
		r.JSON = append(r.JSON, p)
	default:
		return false, fmt.Errorf("unknown kind %q (header or json)", kind)
	}
	if c.Hosts == nil {
		c.Hosts = map[string]Rules{}
	}
	c.Hosts[host] = r
	return true, nil
}

// GeneralPath replaces the element indexes of a JSON path with [*].
func GeneralPath(p string) string {
	segs, err := parsePattern(p)
	if err != nil {
		return p
	}
	var b strings.Builder
	b.WriteString("$")
	for _, s := range segs {
		switch {
		case s.index >= 0 || s.any:
			b.WriteString("[*]")
		case s.descend:
			b.WriteString(".." + s.key)
		default:
			b.WriteString(formatPath([]seg{s})[1:])
		}
	}
	return b.String()
}

// Save writes the list to DATA_DIR/diff-ignore.json atomically.
func (c *IgnoreConfig) Save(dataDir string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dataDir, IgnoreFile), append(b, '\n'), 0o600)
}

// For returns the rules for host: the default ones and the host's.
func (c *IgnoreConfig) For(host string) *Matcher {
	m := &Matcher{}
	if c == nil {
		return m
	}
	add := func(r Rules) {
		for _, h := range r.Headers {
			m.headers = append(m.headers, strings.ToLower(strings.TrimSpace(h)))
		}
		for _, p := range r.JSON {
			if pat, err := parsePattern(p); err == nil {
				m.paths = append(m.paths, pat)
			}
		}
	}
	add(c.Default)
	if r, ok := c.Hosts[strings.ToLower(host)]; ok {
		add(r)
	}
	return m
}

// Matcher answers whether a header or JSON path is ignored. The zero value ignores
// nothing.
type Matcher struct {
	headers []string
	paths   [][]seg
}

// Header reports whether the header name is ignored.
func (m *Matcher) Header(name string) bool {
	if m == nil {
		return false
	}
	n := strings.ToLower(name)
	for _, h := range m.headers {
		if h == n || strings.HasSuffix(h, "*") && strings.HasPrefix(n, h[:len(h)-1]) {
			return true
		}
	}
	return false
}

// path matches a concrete path (a list of keys and indexes, as the JSON diff builds it).
func (m *Matcher) path(p []seg) bool {
	if m == nil {
		return false
	}
	for _, pat := range m.paths {
		if matchSegs(pat, p) {
			return true
		}
	}
	return false
}

// seg is one step of a JSON path: a key, an index, or (in patterns) a wildcard or a
// descent.
type seg struct {
	key     string
	index   int // -1 for keys
	any     bool
	descend bool // ..key: this key at any depth below
}

// parsePattern parses $…, see Rules.JSON.
func parsePattern(p string) ([]seg, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, errors.New("must start with $")
	}
	var out []seg
	s := p[1:]
	for s != "" {
		switch {
		case strings.HasPrefix(s, ".."):
			s = s[2:]
			k := identPrefix(s)
			if k == "" {
				return nil, errors.New("key expected after ..")
			}
			out = append(out, seg{key: k, index: -1, descend: true})
			s = s[len(k):]
		case s[0] == '.':
			s = s[1:]
			if strings.HasPrefix(s, "*") {
				out = append(out, seg{index: -1, any: true})
				s = s[1:]
				continue
			}
			k := identPrefix(s)
			if k == "" {
				return nil, errors.New("key expected after .")
			}
			out = append(out, seg{key: k, index: -1})
			s = s[len(k):]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, errors.New("unclosed [")
			}
			in := s[1:end]
			switch {
			case in == "*":
				out = append(out, seg{index: -1, any: true})
			case strings.HasPrefix(in, `"`):
				k, err := strconv.Unquote(in)
				if err != nil {
					return nil, fmt.Errorf("bad quoted key %s", in)
				}
				out = append(out, seg{key: k, index: -1})
			default:
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad index [%s]", in)
				}
				out = append(out, seg{index: n})
			}
			s = s[end+1:]
		default:
			return nil, fmt.Errorf("unexpected %q", s[:1])
		}
	}
	return out, nil
}

func identPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] != '.' && s[i] != '[' {
		i++
	}
	return s[:i]
}

func segEq(pat, p seg) bool {
	if pat.any {
		return true
	}
	if pat.index >= 0 || p.index >= 0 {
		return pat.index == p.index
	}
	return strings.EqualFold(pat.key, p.key)
}

// matchSegs: the pattern matches the path or one of its prefixes (ignoring a member
// ignores everything under it).
func matchSegs(pat, p []seg) bool {
	if len(pat) == 0 {
		return true
	}
	if pat[0].descend {
		for i := range p {
			if p[i].index < 0 && strings.EqualFold(p[i].key, pat[0].key) && matchSegs(pat[1:], p[i+1:]) {
				return true
			}
		}
		return false
	}
	return len(p) > 0 && segEq(pat[0], p[0]) && matchSegs(pat[1:], p[1:])
}

// formatPath writes a concrete path: $.items[3].price, $["odd key"].
func formatPath(p []seg) string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range p {
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case s.key != "" && !strings.ContainsAny(s.key, ".[]\"' ") && !slices.Contains([]string{"*"}, s.key):
			b.WriteString("." + s.key)
		default:
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		}
	}
	return b.String()
}
