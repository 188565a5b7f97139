package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
	yaml "go.yaml.in/yaml/v4"
)

// WriteJSON writes doc as indented JSON.
func WriteJSON(w io.Writer, doc *openapi3.T) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteYAML writes doc as YAML, keys in the order of its JSON form (openapi, info,
// servers, paths...).
func WriteYAML(w io.Writer, doc *openapi3.T) error { return writeYAML(w, doc, docKeyOrder) }

// docKeyOrder is the order of a document's top-level keys as people write them.
var docKeyOrder = []string{"openapi", "info", "jsonSchemaDialect", "servers", "security", "tags", "paths", "webhooks", "components", "externalDocs"}

// WriteYAMLValue writes any part of a document (an operation, a schema) as YAML, keys in
// the order of its JSON form.
func WriteYAMLValue(w io.Writer, v any) error { return writeYAML(w, v, nil) }

func writeYAML(w io.Writer, v any, order []string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// JSON is YAML: decoding it into a node keeps the key order, which a map would not.
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("openapi yaml: %w", err)
	}
	plain(&n)
	if len(order) > 0 && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		reorder(n.Content[0], order)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// plain drops the flow style the JSON decoding gave every node, so the YAML is in block
// style.
func plain(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Style&yaml.DoubleQuotedStyle != 0 && n.Tag == "!!str" {
		n.Style &^= yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		plain(c)
	}
}

// reorder puts a mapping's keys named in order first, in that order, the rest after.
func reorder(m *yaml.Node, order []string) {
	if m.Kind != yaml.MappingNode {
		return
	}
	rank := map[string]int{}
	for i, k := range order {
		rank[k] = i
	}
	type pair struct{ k, v *yaml.Node }
	var pairs []pair
	for i := 0; i+1 < len(m.Content); i += 2 {
		pairs = append(pairs, pair{m.Content[i], m.Content[i+1]})
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		ri, ok1 := rank[pairs[i].k.Value]
		rj, ok2 := rank[pairs[j].k.Value]
		if !ok1 {
			ri = len(order)
		}
		if !ok2 {
			rj = len(order)
		}
		return ri < rj
	})
	m.Content = m.Content[:0]
	for _, p := range pairs {
		m.Content = append(m.Content, p.k, p.v)
	}
}
