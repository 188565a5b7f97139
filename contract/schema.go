package contract

import (
	"encoding/json"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// Bounds of schema inference.
const (
	MaxDepth        = 24  // nesting levels folded; deeper values are cut and counted
	MaxProps        = 256 // properties kept per object schema
	MaxArrayItems   = 256 // array elements read per sample
	maxDistinct     = 24  // distinct strings remembered per field (for enums)
	enumMaxValues   = 8   // at most this many values make an enum
	enumMinSamples  = 6   // and only over at least this many samples
	exampleMaxBytes = 8 << 10
)

// node folds JSON values seen at one place of a body.
type node struct {
	count int            // non-missing samples (null included)
	nulls int            // samples that were null
	types map[string]int // JSON Schema type -> samples

	props     map[string]*node
	propOrder []string
	objects   int // samples that were objects (for required)
	propsCut  bool

	items *node

	strs     map[string]int
	strsOver bool
	formats  map[string]int // format -> string samples matching it
	strCount int

	big    bool // an integer outside int32
	cut    bool // a value was cut by MaxDepth
	secret bool // named like a secret, or a value looked like one: no enum, no values kept
}

func newNode() *node { return &node{types: map[string]int{}} }

// add folds v (a value decoded by encoding/json with UseNumber) into n.
func (n *node) add(v any, depth int) {
	n.count++
	if depth > MaxDepth {
		n.cut = true
		return
	}
	switch v := v.(type) {
	case nil:
		n.nulls++
	case bool:
		n.types["boolean"]++
	case json.Number:
		if i, err := v.Int64(); err == nil {
			n.types["integer"]++
			if i > math.MaxInt32 || i < math.MinInt32 {
				n.big = true
			}
		} else {
			n.types["number"]++
		}
	case string:
		n.types["string"]++
		n.addString(v)
	case []any:
		n.types["array"]++
		if n.items == nil {
			n.items = newNode()
		}
		for i, e := range v {
			if i >= MaxArrayItems {
				n.cut = true
				break
			}
			n.items.add(e, depth+1)
		}
	case map[string]any:
		n.types["object"]++
		n.objects++
		if n.props == nil {
			n.props = map[string]*node{}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := n.props[k]
			if p == nil {
				if len(n.props) >= MaxProps {
					n.propsCut = true
					continue
				}
				p = newNode()
				p.secret = secretKeyRe.MatchString(k)
				n.props[k] = p
				n.propOrder = append(n.propOrder, k)
			}
			p.add(v[k], depth+1)
		}
	}
}

var (
	uuidRe     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	dateRe     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	dateTimeRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`)
)

func stringFormats(s string) []string {
	var out []string
	switch {
	case uuidRe.MatchString(s):
		out = append(out, "uuid")
	case dateRe.MatchString(s):
		if _, err := time.Parse("2006-01-02", s); err == nil {
			out = append(out, "date")
		}
	case dateTimeRe.MatchString(s):
		out = append(out, "date-time")
	case strings.Contains(s, "@") && !strings.ContainsAny(s, " <>"):
		if a, err := mail.ParseAddress(s); err == nil && a.Address == s {
			out = append(out, "email")
		}
	case strings.Contains(s, "://"):
		if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
			out = append(out, "uri")
		}
	}
	return out
}

func (n *node) addString(s string) {
	n.strCount++
	if n.formats == nil {
		n.formats = map[string]int{}
	}
	for _, f := range stringFormats(s) {
		n.formats[f]++
	}
	if !n.secret && looksSecret(s) {
		n.secret = true
	}
	if n.secret {
		n.strs, n.strsOver = nil, true
	}
	if n.strsOver {
		return
	}
	if n.strs == nil {
		n.strs = map[string]int{}
	}
	if _, ok := n.strs[s]; !ok && (len(n.strs) >= maxDistinct || len(s) > 64) {
		n.strsOver = true
		n.strs = nil
		return
	}
	n.strs[s]++
}

// merge folds o into n (for path templates that collapse several concrete paths).
func (n *node) merge(o *node) {
	if o == nil {
		return
	}
	n.count += o.count
	n.nulls += o.nulls
	for t, c := range o.types {
		n.types[t] += c
	}
	n.objects += o.objects
	n.propsCut = n.propsCut || o.propsCut
	for _, k := range o.propOrder {
		p := n.props[k]
		if p == nil {
			if n.props == nil {
				n.props = map[string]*node{}
			}
			if len(n.props) >= MaxProps {
				n.propsCut = true
				continue
			}
			p = newNode()
			n.props[k] = p
			n.propOrder = append(n.propOrder, k)
		}
		p.merge(o.props[k])
	}
	if o.items != nil {
		if n.items == nil {
			n.items = newNode()
		}
		n.items.merge(o.items)
	}
	n.strCount += o.strCount
	for f, c := range o.formats {
		if n.formats == nil {
			n.formats = map[string]int{}
		}
		n.formats[f] += c
	}
	if o.strsOver || n.strsOver {
		n.strsOver, n.strs = true, nil
	} else {
		for s, c := range o.strs {
			if n.strs == nil {
				n.strs = map[string]int{}
			}
			n.strs[s] += c
		}
		if len(n.strs) > maxDistinct {
			n.strsOver, n.strs = true, nil
		}
	}
	n.big = n.big || o.big
	n.cut = n.cut || o.cut
	if o.secret {
		n.secret, n.strs, n.strsOver = true, nil, true
	}
}

// CountExt is the extension that carries how many samples support a part of a document.
const CountExt = "x-inspector-samples"

// schema renders n. Types seen in fewer samples than the others still count: a field seen
// as both integer and number is a number; other mixes are a oneOf with a count per branch.
func (n *node) schema() *openapi3.Schema {
	s := n.typedSchema()
	s.Extensions = map[string]any{CountExt: n.count}
	if n.cut || n.propsCut {
		s.Extensions["x-inspector-bounded"] = true
	}
	return s
}

func (n *node) typedSchema() *openapi3.Schema {
	types := make([]string, 0, len(n.types))
	for t := range n.types {
		types = append(types, t)
	}
	sort.Strings(types)
	if n.types["integer"] > 0 && n.types["number"] > 0 {
		types = without(types, "integer") // widened
	}
	nullable := n.nulls > 0
	switch len(types) {
	case 0:
		if nullable {
			return &openapi3.Schema{Type: &openapi3.Types{"null"}}
		}
		return &openapi3.Schema{} // only cut values: anything
	case 1:
		s := n.schemaOf(types[0])
		if nullable {
			*s.Type = append(*s.Type, "null")
			if len(s.Enum) > 0 {
				s.Enum = append(s.Enum, nil)
			}
		}
		return s
	}
	s := &openapi3.Schema{}
	for _, t := range types {
		b := n.schemaOf(t)
		c := n.types[t]
		if t == "number" {
			c += n.types["integer"]
		}
		b.Extensions = map[string]any{CountExt: c}
		s.OneOf = append(s.OneOf, openapi3.NewSchemaRef("", b))
	}
	if nullable {
		s.OneOf = append(s.OneOf, openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{"null"},
			Extensions: map[string]any{CountExt: n.nulls}}))
	}
	return s
}

func without(ss []string, x string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

func (n *node) schemaOf(t string) *openapi3.Schema {
	s := &openapi3.Schema{Type: &openapi3.Types{t}}
	switch t {
	case "integer":
		if n.big {
			s.Format = "int64"
		}
	case "string":
		for _, f := range []string{"uuid", "date-time", "date", "email", "uri"} {
			if n.secret {
				break // its example is masked, and must still validate
			}
			if n.strCount > 0 && n.formats[f] == n.strCount {
				s.Format = f
				break
			}
		}
		if s.Format == "" && !n.strsOver && len(n.strs) >= 2 && len(n.strs) <= enumMaxValues &&
			n.strCount >= enumMinSamples && len(n.strs)*2 <= n.strCount {
			vals := make([]string, 0, len(n.strs))
			for v := range n.strs {
				vals = append(vals, v)
			}
			sort.Strings(vals)
			for _, v := range vals {
				s.Enum = append(s.Enum, v)
			}
		}
	case "array":
		if n.items != nil && n.items.count > 0 {
			s.Items = openapi3.NewSchemaRef("", n.items.schema())
		} else {
			s.Items = openapi3.NewSchemaRef("", &openapi3.Schema{})
		}
	case "object":
		s.Properties = openapi3.Schemas{}
		for _, k := range n.propOrder {
			p := n.props[k]
			s.Properties[k] = openapi3.NewSchemaRef("", p.schema())
			if p.count == n.objects {
				s.Required = append(s.Required, k)
			}
		}
		sort.Strings(s.Required)
	}
	return s
}
