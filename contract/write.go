package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

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
func WriteYAML(w io.Writer, doc *openapi3.T) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	// JSON is YAML: decoding it into a node keeps the key order, which a map would not.
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("openapi yaml: %w", err)
	}
	plain(&n)
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
