package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"inspector/content"
	"inspector/engine/session"
)

// showContent is the decoded reading of a session that `inspector show` adds: each
// message's views from content (the same the window shows) and the operation
// (GraphQL operation or gRPC method).
type showContent struct {
	Operation string         `json:"operation,omitempty"`
	Request   []content.View `json:"request"`
	Response  []content.View `json:"response,omitempty"`
	// Protos lists the .proto / descriptor-set files that named protobuf messages.
	Protos []string `json:"protos,omitempty"`
}

// sessionWithContent is `inspector show --json`: the session exactly as stored (bodies
// as they travelled, base64 in JSON) plus "content".
type sessionWithContent struct {
	*session.Session
	Content showContent `json:"content"`
}

func buildShowContent(s *session.Session, protos *content.Protos) showContent {
	req, resp := content.SessionViews(s, content.Options{Protos: protos})
	if req == nil {
		req = []content.View{}
	}
	return showContent{Operation: content.Operation(s), Request: req, Response: resp, Protos: protos.Files()}
}

// takeProtoPath removes --proto-path DIR[,DIR] (also -proto-path, =DIR, repeatable) from
// args and loads the protobuf schemas it names. Files that fail to load are reported on
// stderr and the rest still load; a missing value is a usage error.
func takeProtoPath(args []string) ([]string, *content.Protos, error) {
	var rest, dirs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "proto-path" || a == "--" {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, nil, usagef("--proto-path needs a folder (DIR[,DIR])")
			}
			i++
			val = args[i]
		}
		dirs = append(dirs, splitPathList(val)...)
	}
	if len(dirs) == 0 {
		dirs = splitPathList(os.Getenv("INSPECTOR_PROTO_PATH"))
	}
	if len(dirs) == 0 {
		return rest, nil, nil
	}
	p, err := content.LoadProtos(dirs)
	if err != nil {
		fmt.Fprintf(stderr, "inspector: --proto-path: %v\n", err)
	}
	return rest, p, nil
}

// splitPathList splits DIR,DIR (or the OS list separator) dropping empty entries.
func splitPathList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == filepath.ListSeparator })
}

// showContentFrom reads the views of s: from the running instance (src.api), whose
// --proto-path schemas then apply, when show was given none of its own; else, or when
// the instance cannot answer (an older one without the route), computed here.
func showContentFrom(s *session.Session, protos *content.Protos, src *source) showContent {
	if protos == nil && src != nil && src.api != nil {
		var c showContent
		if err := src.api.do("GET", "/api/v1/sessions/"+strconv.FormatUint(uint64(s.ID), 10)+"/content", nil, &c); err == nil {
			return c
		}
	}
	return buildShowContent(s, protos)
}

// writeShowJSON writes `show --json`.
func writeShowJSON(w io.Writer, s *session.Session, protos *content.Protos, src *source) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(sessionWithContent{Session: s, Content: showContentFrom(s, protos, src)})
}

// writeContentText appends the decoded views to `show`'s text form.
func writeContentText(w io.Writer, s *session.Session, protos *content.Protos, src *source) {
	c := showContentFrom(s, protos, src)
	if c.Operation != "" {
		fmt.Fprintf(w, "\nOperation: %s\n", c.Operation)
	}
	for _, side := range []struct {
		what  string
		views []content.View
	}{{"request", c.Request}, {"response", c.Response}} {
		for _, v := range side.views {
			fmt.Fprintf(w, "\n[%s view: %s", side.what, v.Name)
			if v.Note != "" {
				fmt.Fprintf(w, "; %s", v.Note)
			}
			fmt.Fprintf(w, "]\n%s", v.Text)
			if !strings.HasSuffix(v.Text, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
}
