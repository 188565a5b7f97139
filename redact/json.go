package redact

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// jsonFrame is one open object or array while walking a JSON text.
type jsonFrame struct {
	obj       bool
	expectKey bool
	key       string
	idx       int
	loc       []elem // the container's location
	rule      string // set when everything under the container is masked
}

// json masks the values of sensitive members and of the user's JSON paths in place,
// keeping the text as it was written around them. A text that stops parsing keeps what
// was masked up to there.
func (j *job) json(data []byte, where string) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []jsonFrame
	var out []byte
	last := 0
	done := func() { // a value ended: the parent moves on
		if n := len(stack); n > 0 {
			if top := &stack[n-1]; top.obj {
				top.expectKey = true
			} else {
				top.idx++
			}
		}
	}
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			break
		}
		after := int(dec.InputOffset())
		var top *jsonFrame
		if n := len(stack); n > 0 {
			top = &stack[n-1]
		}
		if top != nil && top.obj && top.expectKey {
			if k, ok := tok.(string); ok {
				top.key, top.expectKey = k, false
				continue
			}
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		// tok starts a value.
		var loc []elem
		rule := ""
		if top != nil {
			cur := elem{index: top.idx}
			if top.obj {
				cur = elem{name: top.key, index: -1}
			}
			loc = append(append(make([]elem, 0, len(top.loc)+1), top.loc...), cur)
			rule = top.rule
			if rule == "" {
				rule = j.jsonRule(loc)
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, jsonFrame{obj: d == '{', expectKey: d == '{', loc: loc, rule: rule})
			continue
		}
		if rule != "" {
			var secret string
			switch v := tok.(type) {
			case string:
				secret = v
			case json.Number:
				secret = v.String()
			}
			if secret != "" && !isPlaceholder(secret) {
				start := before
				for start < after && (data[start] == ' ' || data[start] == '\t' || data[start] == '\r' || data[start] == '\n' || data[start] == ',' || data[start] == ':') {
					start++
				}
				out = append(out, data[last:start]...)
				out = strconv.AppendQuote(out, j.mask(where+" "+locString(loc), rule, secret))
				last = after
			}
		}
		done()
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// jsonRule returns the rule that masks the value at loc, if any.
func (j *job) jsonRule(loc []elem) string {
	for _, c := range j.rules {
		if c.path != nil && matchPath(c.path, loc) {
			return c.rule.String()
		}
	}
	if e := loc[len(loc)-1]; j.r.defaults && e.index < 0 && sensitiveName(e.name) {
		return "default"
	}
	return ""
}
