package content

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"
)

// JWT is a JSON Web Token found in a header, decoded and never verified (no key is
// guessed: the signature is shown as is).
type JWT struct {
	// Where says where it was found: "Authorization", "Cookie sid", "Set-Cookie sid".
	Where  string `json:"where"`
	Header string `json:"header"` // indented JSON
	Claims string `json:"claims"` // indented JSON
	// Alg and Typ are from the header.
	Alg string `json:"alg,omitempty"`
	Typ string `json:"typ,omitempty"`
	// Times lists exp, nbf and iat in words ("expired 3 h ago", "issued 2 min ago").
	Times     []string  `json:"times,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	Expired   bool      `json:"expired,omitempty"`
	Signature int       `json:"signature_bytes"`
}

// ParseJWT decodes a compact JWS (header.claims.signature, base64url). ok is false when
// s is not one.
func ParseJWT(s string, now time.Time) (j JWT, ok bool) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ".")
	if len(parts) != 3 || len(s) > 64<<10 {
		return j, false
	}
	hb, err1 := b64url(parts[0])
	cb, err2 := b64url(parts[1])
	sig, err3 := b64url(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return j, false
	}
	var hdr map[string]any
	if json.Unmarshal(hb, &hdr) != nil {
		return j, false
	}
	alg, _ := hdr["alg"].(string)
	if alg == "" {
		return j, false
	}
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(cb))
	dec.UseNumber()
	if dec.Decode(&claims) != nil {
		return j, false
	}
	j.Alg = alg
	j.Typ, _ = hdr["typ"].(string)
	j.Header = indentJSON(hb)
	j.Claims = indentJSON(cb)
	j.Signature = len(sig)
	for _, c := range []struct{ key, past, future string }{
		{"exp", "expired", "expires"}, {"nbf", "valid since", "not valid until"}, {"iat", "issued", "issued"},
	} {
		n, isNum := claims[c.key].(json.Number)
		if !isNum {
			continue
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1e11 {
			continue
		}
		t := time.Unix(int64(f), 0).UTC()
		d := t.Sub(now)
		var words string
		if d <= 0 {
			words = fmt.Sprintf("%s %s ago", c.past, Ago(-d))
		} else {
			words = fmt.Sprintf("%s in %s", c.future, Ago(d))
		}
		j.Times = append(j.Times, fmt.Sprintf("%s: %s (%s)", c.key, words, t.Format(time.RFC3339)))
		if c.key == "exp" {
			j.Expires, j.Expired = t, d <= 0
		}
	}
	return j, true
}

// Ago renders a duration in one rounded unit: "40 s", "3 min", "3 h", "2 d", "5 mo", "2 y".
func Ago(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s < 59.5:
		return fmt.Sprintf("%d s", int(math.Round(s)))
	case s < 59.5*60:
		return fmt.Sprintf("%d min", int(math.Round(s/60)))
	case s < 47.5*3600:
		return fmt.Sprintf("%d h", int(math.Round(s/3600)))
	case s < 60*86400:
		return fmt.Sprintf("%d d", int(math.Round(s/86400)))
	case s < 548*86400:
		return fmt.Sprintf("%d mo", int(math.Round(s/(30.44*86400))))
	}
	return fmt.Sprintf("%d y", int(math.Round(s/(365.25*86400))))
}

func b64url(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func indentJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return string(b)
	}
	return buf.String()
}

// FindJWTs returns the JWTs in a message's headers: Authorization (Bearer, or a bare
// token), Proxy-Authorization, Cookie values and Set-Cookie values, sorted by where.
func FindJWTs(h http.Header, now time.Time) []JWT {
	var out []JWT
	for _, name := range []string{"Authorization", "Proxy-Authorization", "X-Access-Token", "X-Id-Token"} {
		for _, v := range h.Values(name) {
			tok := v
			if k, rest, ok := strings.Cut(v, " "); ok && (strings.EqualFold(k, "bearer") || strings.EqualFold(k, "jwt")) {
				tok = rest
			}
			if j, ok := ParseJWT(tok, now); ok {
				j.Where = name
				out = append(out, j)
			}
		}
	}
	if cs := h.Values("Cookie"); len(cs) > 0 {
		for _, c := range (&http.Request{Header: http.Header{"Cookie": cs}}).Cookies() {
			if j, ok := ParseJWT(c.Value, now); ok {
				j.Where = "Cookie " + c.Name
				out = append(out, j)
			}
		}
	}
	if sc := h.Values("Set-Cookie"); len(sc) > 0 {
		for _, c := range (&http.Response{Header: http.Header{"Set-Cookie": sc}}).Cookies() {
			if j, ok := ParseJWT(c.Value, now); ok {
				j.Where = "Set-Cookie " + c.Name
				out = append(out, j)
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Where < out[b].Where })
	return out
}

func jwtView(j JWT) View {
	doc := struct {
		Where     string          `json:"where"`
		Times     []string        `json:"times,omitempty"`
		Header    json.RawMessage `json:"header"`
		Claims    json.RawMessage `json:"claims"`
		Signature string          `json:"signature"`
	}{j.Where, j.Times, json.RawMessage(j.Header), json.RawMessage(j.Claims),
		fmt.Sprintf("%d bytes, not verified", j.Signature)}
	b, _ := json.MarshalIndent(doc, "", "  ")
	note := j.Alg
	if j.Expired {
		note += "; expired"
	}
	for _, t := range j.Times {
		if strings.HasPrefix(t, "exp:") {
			note += "; " + strings.TrimPrefix(t, "exp: ")
		}
	}
	return View{Name: "JWT (" + j.Where + ")", Kind: KindJWT, Lang: "json", Text: string(b), Note: note}
}

// maxBodyJWTs bounds how many tokens FindBodyJWTs returns, and maxBodyJWTScan the JSON
// it reads for them.
const (
	maxBodyJWTs    = 8
	maxBodyJWTScan = 1 << 20
)

// FindBodyJWTs returns the JWTs among a JSON body's string values (OAuth and OpenID
// token responses: access_token, id_token, refresh_token, …), each named by its key path.
func FindBodyJWTs(body []byte, now time.Time) []JWT {
	if len(body) > maxBodyJWTScan || !bytes.Contains(body, []byte("eyJ")) {
		return nil
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []JWT
	var walk func(path string, v any, depth int)
	walk = func(path string, v any, depth int) {
		if len(out) >= maxBodyJWTs || depth > 32 {
			return
		}
		switch x := v.(type) {
		case string:
			if strings.HasPrefix(x, "eyJ") {
				if j, ok := ParseJWT(x, now); ok {
					j.Where = "body " + path
					out = append(out, j)
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(strings.TrimPrefix(path+"."+k, "."), x[k], depth+1)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e, depth+1)
			}
		}
	}
	walk("", v, 0)
	return out
}
