package content

import (
	"bytes"
	"encoding/json"
	"inspector/internal/textual"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Kind names how a body is best read. The values are stable strings: `show --json`
// prints them and the window registers its viewers by them.
type Kind string

// Body kinds.
const (
	KindEmpty       Kind = "empty"
	KindJSON        Kind = "json"
	KindXML         Kind = "xml"
	KindHTML        Kind = "html"
	KindJavaScript  Kind = "javascript"
	KindCSS         Kind = "css"
	KindText        Kind = "text"
	KindImage       Kind = "image"
	KindProtobuf    Kind = "protobuf"
	KindGRPC        Kind = "grpc"
	KindGRPCWeb     Kind = "grpc-web"
	KindGRPCWebText Kind = "grpc-web-text"
	KindConnect     Kind = "connect"
	KindGraphQL     Kind = "graphql"
	KindSSE         Kind = "sse"
	KindMultipart   Kind = "multipart"
	KindForm        Kind = "form"
	KindBinary      Kind = "binary"
)

// Lang returns the syntax-colour language of a text kind ("json", "xml", "html",
// "javascript", "css"), or "".
func (k Kind) Lang() string {
	switch k {
	case KindJSON, KindXML, KindHTML, KindJavaScript, KindCSS:
		return string(k)
	case KindGraphQL:
		return "json"
	}
	return ""
}

// Textual reports whether the kind's body is text to convert with Text.
func (k Kind) Textual() bool {
	switch k {
	case KindJSON, KindXML, KindHTML, KindJavaScript, KindCSS, KindText, KindGraphQL, KindSSE, KindForm:
		return true
	}
	return false
}

// MediaType returns the lower-cased media type of a Content-Type value, "" when absent
// or unparsable.
func MediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}

// KindOfType maps a media type alone to a kind; ok is false when the type says nothing
// definite (absent, application/octet-stream, text/plain…) and the bytes must decide.
func KindOfType(mt string) (k Kind, ok bool) {
	switch mt {
	case "application/grpc", "application/grpc+proto":
		return KindGRPC, true
	case "application/grpc-web", "application/grpc-web+proto":
		return KindGRPCWeb, true
	case "application/grpc-web-text", "application/grpc-web-text+proto":
		return KindGRPCWebText, true
	case "application/connect+proto", "application/connect+json":
		return KindConnect, true
	case "application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf",
		"application/x-google-protobuf", "application/proto", "application/octet-stream+protobuf":
		return KindProtobuf, true
	case "application/graphql", "application/graphql-response+json":
		return KindGraphQL, true
	case "text/event-stream":
		return KindSSE, true
	case "application/x-www-form-urlencoded":
		return KindForm, true
	case "text/html", "application/xhtml+xml":
		return KindHTML, true
	case "text/css":
		return KindCSS, true
	case "application/javascript", "text/javascript", "application/x-javascript",
		"application/ecmascript", "text/ecmascript", "module/javascript":
		return KindJavaScript, true
	case "application/json", "text/json", "application/x-ndjson", "application/manifest+json":
		return KindJSON, true
	case "application/xml", "text/xml", "image/svg+xml":
		return KindXML, true
	}
	switch {
	case strings.HasPrefix(mt, "application/grpc+"):
		return KindGRPC, true
	case strings.HasPrefix(mt, "multipart/"):
		return KindMultipart, true
	case strings.HasPrefix(mt, "image/"):
		return KindImage, true
	case strings.HasSuffix(mt, "+json"):
		return KindJSON, true
	case strings.HasSuffix(mt, "+xml"):
		return KindXML, true
	case strings.HasSuffix(mt, "+proto") || strings.HasSuffix(mt, "+protobuf"):
		return KindProtobuf, true
	}
	return "", false
}

// Detect decides the kind of a decoded body from its headers and its bytes: the
// Content-Type when it is definite, then sniffing (JSON, HTML, XML, images, text). A JSON
// request body of the GraphQL shape ({"query": "..."} or a batch of them) is KindGraphQL.
// It is the one classifier behind the window, `inspector show`, HAR export and filters.
func Detect(h http.Header, body []byte) Kind {
	mt := MediaType(h.Get("Content-Type"))
	k, ok := KindOfType(mt)
	if len(body) == 0 && k != KindGRPC && k != KindGRPCWeb && k != KindConnect {
		return KindEmpty
	}
	if ok {
		if k == KindJSON && isGraphQLRequest(body) {
			return KindGraphQL
		}
		return k
	}
	return sniff(body)
}

func sniff(body []byte) Kind {
	if bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}) || bytes.HasPrefix(body, []byte{0xFE, 0xFF}) || bytes.HasPrefix(body, []byte{0xFF, 0xFE}) {
		return KindText
	}
	ct := http.DetectContentType(body)
	switch {
	case strings.HasPrefix(ct, "image/"):
		return KindImage
	case strings.HasPrefix(ct, "text/html"):
		return KindHTML
	case strings.HasPrefix(ct, "text/xml"):
		return KindXML
	}
	if !looksText(body) {
		return KindBinary
	}
	t := bytes.TrimSpace(body)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		if isGraphQLRequest(t) {
			return KindGraphQL
		}
		return KindJSON
	}
	if bytes.HasPrefix(t, []byte("data:")) || bytes.HasPrefix(t, []byte("event:")) || bytes.HasPrefix(t, []byte("id:")) {
		if bytes.Contains(t, []byte("\n\n")) || bytes.Contains(t, []byte("\r\n\r\n")) {
			return KindSSE
		}
	}
	return KindText
}

func sniffHTML(b []byte) bool {
	return strings.HasPrefix(http.DetectContentType(b), "text/html")
}

// looksText is textual.LooksText: the body's first 4 KiB read as text.
func looksText(b []byte) bool { return textual.LooksText(b) }

// LooksText is looksText for other packages (raw views).
func LooksText(b []byte) bool { return textual.LooksText(b) }

// isGraphQLRequest reports whether a JSON body is a GraphQL request: an object with a
// string "query" (and only GraphQL-request keys), or a non-empty array of them.
func isGraphQLRequest(b []byte) bool {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return false
	}
	if t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, m := range batch {
			if !isGraphQLRequest(m) {
				return false
			}
		}
		return true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(t, &obj) != nil {
		return false
	}
	q, ok := obj["query"]
	if !ok {
		// persisted queries: operationName + extensions.persistedQuery
		_, hasOp := obj["operationName"]
		_, hasExt := obj["extensions"]
		return hasOp && hasExt && bytes.Contains(obj["extensions"], []byte("persistedQuery"))
	}
	var s string
	if json.Unmarshal(q, &s) != nil || s == "" {
		return false
	}
	for k := range obj {
		switch k {
		case "query", "variables", "operationName", "extensions":
		default:
			return false
		}
	}
	return true
}

// GraphQLGET returns the query of a GET GraphQL request URL (?query=…), ok false when the
// URL has none.
func GraphQLGET(rawURL string) (query, opName, variables string, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", "", false
	}
	q := u.Query()
	query = q.Get("query")
	if strings.TrimSpace(query) == "" || !utf8.ValidString(query) {
		return "", "", "", false
	}
	return query, q.Get("operationName"), q.Get("variables"), true
}
