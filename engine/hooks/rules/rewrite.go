package rules

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"inspector/content"
	"inspector/engine"
	"inspector/filter"
)

// The rewrite kinds: body, URL and status rewrites, and the block list. They live in this
// file and in their own switch arms of compile, OnRequest and OnResponse.
const (
	// BodyRewrite replaces every match of Pattern (RE2) in the request or response body
	// (Phase) with Replace ($1, ${name} expand). The body is decoded first (gzip, br,
	// zstd, deflate) and sent decoded, without Content-Encoding. Bodies longer than
	// MaxRewriteBody, streams (text/event-stream, gRPC) and bodies in an encoding Inspector
	// cannot decode pass unchanged.
	BodyRewrite Kind = "body_rewrite"
	// URLRewrite replaces matches of Pattern in the full request URL with Replace; the
	// result must be an absolute http(s) URL (otherwise the request is answered with a 502
	// that says so). The Host header follows.
	URLRewrite Kind = "url_rewrite"
	// StatusRewrite sets the response status to Status (the body and headers stay).
	StatusRewrite Kind = "status_rewrite"
	// Block answers a matching request with a refusal (Status, default 403, and a body
	// that names the rule); nothing goes upstream. List holds host globs (`ads.example`,
	// `*.tracker.example`) and URL prefixes (`https://example.com/ads/`); a request is
	// blocked when it matches an entry of List (any) and Filter (when set).
	Block Kind = "block"
)

// MaxRewriteBody is the largest (decoded) body a body_rewrite rule rewrites: 8 MiB.
const MaxRewriteBody = 8 << 20

// rewrite is the compiled part of the rewrite kinds.
type rewrite struct {
	re   *regexp.Regexp
	list *filter.Expr // block: the list as an OR of host: and url: terms
}

// compileRewrite checks the fields of the rewrite kinds.
func (c *compiledRule) compileRewrite(fail func(string, ...any) (*compiledRule, error)) (*compiledRule, error) {
	r := c.Rule
	switch r.Kind {
	case BodyRewrite, URLRewrite:
		if r.Kind == BodyRewrite {
			switch r.Phase {
			case "", "request", "response":
			default:
				return fail("phase %q: want request or response", r.Phase)
			}
		}
		if r.Pattern == "" {
			return fail("empty pattern")
		}
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return fail("pattern: %v", err)
		}
		c.rw.re = re
	case StatusRewrite:
		if r.Status < 200 || r.Status > 999 || r.Status == http.StatusNoContent || r.Status == http.StatusNotModified {
			return fail("status %d: want 200-999, except 204 and 304 (they allow no body)", r.Status)
		}
	case Block:
		if r.Status != 0 && (r.Status < 200 || r.Status > 999) {
			return fail("status %d out of range", r.Status)
		}
		var terms []string
		for _, e := range r.List {
			e = strings.TrimSpace(e)
			switch {
			case e == "":
				continue
			case strings.ContainsAny(e, "\"\\ \t\r\n"):
				return fail("block list entry %q: no blanks, quotes or backslashes", e)
			case strings.HasPrefix(e, "http://") || strings.HasPrefix(e, "https://"):
				if u, err := url.Parse(e); err != nil || u.Host == "" {
					return fail("block list entry %q: not a URL", e)
				}
				terms = append(terms, `url:"`+e+`"`)
			case strings.Contains(e, "/"):
				return fail("block list entry %q: want a host (a glob) or a URL starting with http:// or https://", e)
			default:
				terms = append(terms, `host:"`+e+`"`)
			}
		}
		if len(terms) == 0 && strings.TrimSpace(r.Filter) == "" {
			return fail("an empty block list needs a filter")
		}
		if len(terms) > 0 {
			x, err := filter.Parse(strings.Join(terms, " OR "))
			if err != nil {
				return fail("block list: %v", err)
			}
			c.rw.list = x
		}
	}
	return c, nil
}

// emptyFilterAllowed: a block rule may rely on its list alone (compileRewrite refuses
// one with neither).
func (r Rule) emptyFilterAllowed() bool { return r.Kind == Block }

// requestRewrite applies a rewrite rule at the request stage; answered reports that the
// rule answered the request (block, or a URL rewrite that produced no URL).
func (c *compiledRule) requestRewrite(f *engine.Flow, mt *matcher) (answered bool, err error) {
	r := f.Request
	switch c.Kind {
	case Block:
		if c.rw.list != nil && !mt.match(c.rw.list) {
			return false, nil
		}
		st := c.Status
		if st == 0 {
			st = http.StatusForbidden
		}
		h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Inspector-Rule": {c.name()}}
		f.Response = canned(st, h, []byte(fmt.Sprintf("Blocked by Inspector rule %q: %s is on the block list.\n", c.name(), r.URL)), r)
		return true, nil
	case URLRewrite:
		old := f.Session.Request.URL // absolute; r.URL of a server request may be a path
		next := c.rw.re.ReplaceAllString(old, c.Replace)
		if next == old {
			return false, nil
		}
		u, perr := url.Parse(next)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Inspector-Rule": {c.name()}}
			f.Response = canned(http.StatusBadGateway, h, []byte(fmt.Sprintf("Inspector url_rewrite rule %q turned %s into %q, which is not an absolute http or https URL.\n", c.name(), old, next)), r)
			return true, nil
		}
		r.URL = u
		r.Host = u.Host
		f.Session.Request.URL = u.String()
		mt.s.Request.URL = f.Session.Request.URL
		mt.reset()
	case BodyRewrite:
		if c.Phase == "response" {
			return false, nil
		}
		b, ok, err := rewriteBody(c, r.Header, &r.Body)
		if err != nil {
			return false, err
		}
		if ok {
			f.SetBody(b)
		}
	}
	return false, nil
}

// responseRewrite applies a rewrite rule at the response stage.
func (c *compiledRule) responseRewrite(f *engine.Flow) error {
	switch c.Kind {
	case StatusRewrite:
		f.Response.StatusCode = c.Status
		f.Response.Status = strconv.Itoa(c.Status) + " " + http.StatusText(c.Status)
	case BodyRewrite:
		if f.Response.StatusCode == http.StatusSwitchingProtocols {
			return nil
		}
		b, ok, err := rewriteBody(c, f.Response.Header, &f.Response.Body)
		if err != nil {
			return err
		}
		if ok {
			f.SetBody(b)
		}
	}
	return nil
}

// isResponseRewrite says whether c acts at the response stage.
func (c *compiledRule) isResponseRewrite() bool {
	return c.Kind == StatusRewrite || (c.Kind == BodyRewrite && c.Phase == "response")
}

// rewriteBody reads *body (up to MaxRewriteBody), decodes it, and applies the rule. When
// the body is not rewritten (too long, a stream, an unknown encoding, no match) *body
// still yields every byte and ok is false. On success the header loses Content-Encoding.
func rewriteBody(c *compiledRule, h http.Header, body *io.ReadCloser) (out []byte, ok bool, err error) {
	if *body == nil || *body == http.NoBody || streamingBody(h) {
		return nil, false, nil
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(*body, MaxRewriteBody+1))
	if err != nil {
		return nil, false, fmt.Errorf("rule %q: reading the body: %w", c.name(), err)
	}
	raw := buf.Bytes()
	if n > MaxRewriteBody {
		*body = readCloser{io.MultiReader(bytes.NewReader(raw), *body), *body}
		return nil, false, nil
	}
	(*body).Close()
	*body = io.NopCloser(bytes.NewReader(raw))
	dec, encs, cut, derr := content.Decode(h, raw, MaxRewriteBody)
	if derr != nil || cut {
		return nil, false, nil
	}
	if !c.rw.re.Match(dec) {
		return nil, false, nil
	}
	out = c.rw.re.ReplaceAll(dec, []byte(c.Replace))
	if len(encs) > 0 {
		h.Del("Content-Encoding")
	}
	return out, true, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// streamingBody: event streams and gRPC are never buffered whole.
func streamingBody(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream" || strings.HasPrefix(mt, "application/grpc") || strings.HasPrefix(mt, "application/connect+")
}
