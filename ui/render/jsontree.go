package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// MaxTreeNodes bounds the nodes of a JSON tree (a bigger document is shown as Pretty
// text only).
const MaxTreeNodes = 200_000

// ErrTreeTooLarge is returned by ParseJSONTree for documents over MaxTreeNodes nodes.
var ErrTreeTooLarge = errors.New("too many values for the tree view")

// JSONNode is one value of a JSON document: an object or array (with children) or a
// scalar.
type JSONNode struct {
	Key      string  // member name, or "[i]" for array elements; "" for the root
	Kind     byte    // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	Value    string  // a scalar as JSON text; for containers a summary: "{3}", "[10]"
	Children []int32 // indexes into JSONTree.Nodes
}

// JSONTree is a parsed JSON document as a flat node table; node 0 is the root.
type JSONTree struct{ Nodes []JSONNode }

// ParseJSONTree parses data into a tree, streaming tokens (no maps of interfaces).
func ParseJSONTree(data []byte) (*JSONTree, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	t := &JSONTree{}
	if _, err := t.value(d, ""); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return t, nil
}

func (t *JSONTree) add(n JSONNode) (int32, error) {
	if len(t.Nodes) >= MaxTreeNodes {
		return 0, ErrTreeTooLarge
	}
	t.Nodes = append(t.Nodes, n)
	return int32(len(t.Nodes) - 1), nil
}

func (t *JSONTree) value(d *json.Decoder, key string) (int32, error) {
	tok, err := d.Token()
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case json.Delim:
		kind := byte('o')
		if v == '[' {
			kind = 'a'
		} else if v != '{' {
			return 0, fmt.Errorf("unexpected %v", v)
		}
		me, err := t.add(JSONNode{Key: key, Kind: kind})
		if err != nil {
			return 0, err
		}
		var kids []int32
		for i := 0; d.More(); i++ {
			ck := "[" + strconv.Itoa(i) + "]"
			if kind == 'o' {
				kt, err := d.Token()
				if err != nil {
					return 0, err
				}
				s, _ := kt.(string)
				ck = s
			}
			c, err := t.value(d, ck)
			if err != nil {
				return 0, err
			}
			kids = append(kids, c)
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return 0, err
		}
		t.Nodes[me].Children = kids
		if kind == 'o' {
			t.Nodes[me].Value = "{" + strconv.Itoa(len(kids)) + "}"
		} else {
			t.Nodes[me].Value = "[" + strconv.Itoa(len(kids)) + "]"
		}
		return me, nil
	case string:
		b, _ := json.Marshal(v)
		return t.add(JSONNode{Key: key, Kind: 's', Value: string(b)})
	case json.Number:
		return t.add(JSONNode{Key: key, Kind: 'n', Value: v.String()})
	case bool:
		return t.add(JSONNode{Key: key, Kind: 'b', Value: strconv.FormatBool(v)})
	case nil:
		return t.add(JSONNode{Key: key, Kind: 'z', Value: "null"})
	}
	return 0, fmt.Errorf("unexpected token %v", tok)
}
