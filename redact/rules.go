// Package redact masks secrets in sessions before they leave the machine: in a HAR
// exported for sharing, in MCP answers, in a request copied as code.
//
// A Redactor holds a rule set (the default rules, and the user's) and a table of the
// secrets it has masked so far. Masking is consistent for the Redactor's life: the same
// secret always becomes the same placeholder (REDACTED-1, REDACTED-2, …), so a reader can
// follow a token from the login response into the requests that use it. One export uses
// one Redactor.
//
// Redaction works on copies; the store keeps the originals.
//
// # Default rules
//
//   - Authorization and Proxy-Authorization: the credentials (the scheme stays).
//   - Cookie: every cookie's value; Set-Cookie: the cookie's value (the attributes stay).
//   - Headers named like a key, token, secret or password (X-Api-Key, X-Auth-Token, …).
//   - Query and form parameters named like those (api_key, access_token, password, sig, …).
//   - JSON body fields named like those, at any depth (with everything under them).
//   - JWT signatures, anywhere in a URL, header or body (header and claims stay readable).
//   - A password in a URL's user information.
//
// A secret masked in one place is masked wherever else it appears in the same session
// (and in later sessions of the same export): echoed in a body, in a Referer, in a
// WebSocket message.
//
// # User rules
//
// A rule is written KIND:VALUE (ParseRule), optionally limited to the sessions matching
// a filter expression with " if FILTER" at the end:
//
//	header:X-Customer-Id         the header's value
//	param:ssn                    a query or form parameter's value
//	json:$.user.address          a JSON path ($ optional; .name, [N], [*], * and .. for any depth)
//	regex:acct-[0-9]{8}          every match (the first group only when the regex has groups)
//	filter:host:bank.example     the bodies of the matching sessions, whole
//	json:$.card if host:shop.example
package redact

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"inspector/filter"
)

// Kind names what a rule matches.
type Kind string

// The rule kinds.
const (
	Header Kind = "header" // a header's value, by name
	Param  Kind = "param"  // a query or form parameter's value, by name
	JSON   Kind = "json"   // a JSON body's value at a path
	Regex  Kind = "regex"  // every match of a regular expression in URLs, header values and text bodies
	Filter Kind = "filter" // the whole bodies of the sessions a filter matches
)

// Rule is one user rule.
type Rule struct {
	ID    int64  `json:"id,omitempty"`
	Kind  Kind   `json:"kind"`
	Value string `json:"value"`
	// If limits the rule to the sessions matching this filter expression ("" : all).
	If string `json:"if,omitempty"`
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	s := string(r.Kind) + ":" + r.Value
	if r.If != "" {
		s += " if " + r.If
	}
	return s
}

// ParseRule reads a rule written KIND:VALUE[ if FILTER].
func ParseRule(spec string) (Rule, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok {
		return Rule{}, fmt.Errorf("redaction rule %q: want KIND:VALUE with KIND one of header, param, json, regex, filter", spec)
	}
	r := Rule{Kind: Kind(strings.ToLower(strings.TrimSpace(kind))), Value: rest}
	if v, cond, ok := strings.Cut(rest, " if "); ok && r.Kind != Filter {
		r.Value, r.If = v, strings.TrimSpace(cond)
	}
	r.Value = strings.TrimSpace(r.Value)
	if _, err := compileRule(r); err != nil {
		return Rule{}, err
	}
	return r, nil
}

// Validate checks a rule: a known kind, a value, a regex or JSON path or filter that
// compiles.
func Validate(r Rule) error {
	_, err := compileRule(r)
	return err
}

// compiled is a rule ready to apply.
type compiled struct {
	rule  Rule
	cond  *filter.Expr
	name  string         // header or param name, lower case
	path  []pathStep     // JSON
	re    *regexp.Regexp // Regex
	whole *filter.Expr   // Filter
}

func compileRule(r Rule) (*compiled, error) {
	c := &compiled{rule: r}
	bad := func(format string, a ...any) (*compiled, error) {
		return nil, fmt.Errorf("redaction rule %q: %s", r.String(), fmt.Sprintf(format, a...))
	}
	if r.Value == "" {
		return bad("the value is empty")
	}
	if r.If != "" {
		f, err := filter.Parse(r.If)
		if err != nil {
			return bad("if: %v", err)
		}
		c.cond = f
	}
	switch r.Kind {
	case Header, Param:
		c.name = strings.ToLower(r.Value)
	case JSON:
		p, err := parsePath(r.Value)
		if err != nil {
			return bad("%v", err)
		}
		c.path = p
	case Regex:
		re, err := regexp.Compile(r.Value)
		if err != nil {
			return bad("%v", err)
		}
		if re.MatchString("") {
			return bad("the regex matches the empty text")
		}
		c.re = re
	case Filter:
		f, err := filter.Parse(r.Value)
		if err != nil {
			return bad("%v", err)
		}
		c.whole = f
	default:
		return bad("unknown kind %q (want header, param, json, regex or filter)", r.Kind)
	}
	return c, nil
}

// pathStep is one step of a JSON path: a member name, an index, any member or index
// ("*"), or any depth ("..", descend).
type pathStep struct {
	name    string
	index   int // -1: not an index
	any     bool
	descend bool
}

var errPath = errors.New("JSON path: want $.name.name[0][*], with * and .. allowed")

func parsePath(p string) ([]pathStep, error) {
	p = strings.TrimSpace(p)
	p = strings.TrimPrefix(p, "$")
	var steps []pathStep
	for p != "" {
		switch {
		case strings.HasPrefix(p, ".."):
			steps = append(steps, pathStep{descend: true, index: -1})
			p = p[2:]
			if p == "" || p[0] == '.' {
				return nil, errPath
			}
			if p[0] != '[' {
				p = "." + p
			}
		case p[0] == '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			name := p[:end]
			if name == "" {
				return nil, errPath
			}
			if name == "*" {
				steps = append(steps, pathStep{any: true, index: -1})
			} else {
				steps = append(steps, pathStep{name: name, index: -1})
			}
			p = p[end:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, errPath
			}
			in := p[1:end]
			switch {
			case in == "*":
				steps = append(steps, pathStep{any: true, index: -1})
			case len(in) >= 2 && (in[0] == '"' || in[0] == '\'') && in[len(in)-1] == in[0]:
				steps = append(steps, pathStep{name: in[1 : len(in)-1], index: -1})
			default:
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, errPath
				}
				steps = append(steps, pathStep{index: n})
			}
			p = p[end+1:]
		default:
			// A bare first name: "user.password".
			if len(steps) == 0 {
				p = "." + p
				continue
			}
			return nil, errPath
		}
	}
	if len(steps) == 0 {
		return nil, errPath
	}
	if steps[len(steps)-1].descend {
		return nil, errPath
	}
	return steps, nil
}

// elem is one element of a concrete JSON location: a member name or an array index.
type elem struct {
	name  string
	index int // -1 for a member
}

// matchPath reports whether the location matches the rule's steps.
func matchPath(steps []pathStep, loc []elem) bool {
	if len(steps) == 0 {
		return len(loc) == 0
	}
	st := steps[0]
	if st.descend {
		for i := 0; i <= len(loc); i++ {
			if matchPath(steps[1:], loc[i:]) {
				return true
			}
		}
		return false
	}
	if len(loc) == 0 {
		return false
	}
	e := loc[0]
	switch {
	case st.any:
	case st.index >= 0:
		if e.index != st.index {
			return false
		}
	default:
		if e.index >= 0 || e.name != st.name {
			return false
		}
	}
	return matchPath(steps[1:], loc[1:])
}

// locString writes a location as a path: $.user.tokens[0].
func locString(loc []elem) string {
	var b strings.Builder
	b.WriteString("$")
	for _, e := range loc {
		if e.index >= 0 {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
		} else {
			b.WriteString("." + e.name)
		}
	}
	return b.String()
}

// sensitiveName reports whether a header, parameter or JSON member name looks like it
// holds a secret.
func sensitiveName(name string) bool {
	n := strings.ToLower(name)
	n = strings.NewReplacer("-", "", "_", "", ".", "", " ", "").Replace(n)
	switch n {
	case "pwd", "pass", "pin", "otp", "sid", "sig", "key", "auth", "code", "jwt", "nonce", "ticket":
		return true
	}
	// Counts and descriptions of tokens are not tokens: max_tokens, token_type.
	for _, not := range []string{"tokens", "type", "expires", "expiry", "count", "length", "usage", "limit", "url", "uri", "endpoint", "name", "hint"} {
		if strings.HasSuffix(n, not) {
			return false
		}
	}
	for _, s := range []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey",
		"credential", "authorization", "sessionid", "sessid", "signature", "cookie", "csrf", "xsrf", "bearer", "refresh"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// sensitiveHeader: the default set of headers whose value is masked whole (Authorization,
// Cookie and Set-Cookie are handled apart).
func sensitiveHeader(name string) bool {
	switch strings.ToLower(name) {
	case "www-authenticate", "proxy-authenticate", "authentication-info", "access-control-allow-headers",
		"access-control-expose-headers", "access-control-request-headers", "vary", "accept":
		return false
	case "x-amz-security-token", "x-goog-api-key", "x-functions-key", "ocp-apim-subscription-key", "x-csrftoken":
		return true
	}
	return sensitiveName(name)
}
