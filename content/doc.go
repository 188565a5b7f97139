// Package content is the one place that decides what a message body is and decodes it
// for reading: the window's body views, `inspector show --json`, HAR export, the filter's
// body: / gql: / grpc: terms and breakpoints all go through it. It is plain Go (no Fyne)
// and builds with CGO_ENABLED=0; every function is safe for concurrent use.
//
// # Encodings
//
// Decode undoes a Content-Encoding (gzip, x-gzip, deflate, br, zstd, and stacked lists
// such as "gzip, br", undone last first), with the decoded size capped by a limit so a
// compression bomb costs at most limit bytes. Bad input never loses the body: an
// unsupported coding (ErrUnsupportedEncoding) or damaged data (ErrDamaged) returns it
// untouched with the error; a capture cut short yields what decoded, marked truncated.
// Encode is the inverse (HAR import, edited bodies).
//
// Text in other charsets is converted to UTF-8 by Text with golang.org/x/text: a BOM,
// the Content-Type charset, an HTML <meta charset>/http-equiv or an XML declaration, then
// UTF-8 or windows-1252 as browsers guess.
//
// # Kinds
//
// Detect maps headers and decoded bytes to a Kind: json, xml, html, javascript, css,
// text, image, protobuf, grpc, grpc-web, grpc-web-text, connect, graphql, sse,
// multipart, form, binary (and empty). Kind values are stable strings.
//
// # Views
//
// Views(header, body, Options) is the plain-Go API the window and `inspector show --json`
// share: it decodes the body and returns a list of named views, the best first:
//
//	type View struct {
//		Name    string      // tab title: "JSON", "Messages", "Events", "LLM text", "GraphQL", …
//		Kind    Kind        // the kind read (KindJWT for token views)
//		Text    string      // UTF-8, at most Options.TextCap bytes
//		Lang    string      // "json", "xml", "html", "javascript", "css", "graphql" or ""
//		Rows    [][2]string // a table for forms, part lists, gRPC status
//		Partial bool        // less than the whole (capture cut, caps, an open stream)
//		Note    string      // "decoded from br", "charset shift_jis", errors, counts
//	}
//
// SessionViews does both messages of a session (the request URL names the gRPC method
// and carries GraphQL GET queries; trailers give gRPC status). Which views appear:
//
//	json, xml, html, javascript, css, text  one pretty-printed, charset-converted view
//	graphql (request)   "GraphQL" (operation type and name, pretty query), "Variables",
//	                    "JSON"; a batch gives "GraphQL 1", "GraphQL 2", …; a response with
//	                    errors adds "GraphQL errors"
//	grpc, grpc-web, grpc-web-text, connect
//	                    "Messages" (each length-prefixed message, decompressed per
//	                    grpc-encoding, as protojson when Options.Protos knows the method,
//	                    else fields by number), "Status" (grpc-status, grpc-message,
//	                    status details), Connect's "End of stream"
//	protobuf            one message, as above
//	sse                 "Events" (id, event, retry, data with JSON indented) and, for LLM
//	                    streams, "LLM text": the streamed text joined (OpenAI, Anthropic,
//	                    Gemini, Ollama shapes)
//	multipart           "Parts": each part's headers and body (text, hex or image size)
//	form                "Form" with Rows
//	image               "Image" (format and size in Note)
//	binary / undecodable  "Hex", and "Protobuf (guess)" when a binary body parses as a
//	                    message
//	any message         "JWT (where)" for each JSON Web Token in Authorization, Cookie
//	                    or Set-Cookie, or (JSON bodies) a string value such as an OAuth
//	                    id_token: header, claims, expiry in words, never verified
//
// Each kind's viewer lives in its kind's file and is registered with Register in init
// (views_text.go: text kinds, image, form, binary; graphql.go; sse.go; grpc_views.go:
// gRPC, gRPC-Web, Connect, protobuf; multipart.go), so adding a kind touches one file.
//
// A view's Lang names the syntax the window colours it with (ui/render.Tokens, on chroma's
// lexers, a visible line at a time).
//
// # Protobuf schemas
//
// LoadProtos(paths) compiles .proto files in-process (protocompile, no protoc) and reads
// descriptor sets; the result maps a request path "/pkg.Service/Method" to its types.
// MessageJSON renders a message with protojson; EncodeJSON turns edited JSON back into
// wire bytes (for breakpoints). `inspector show --proto-path DIR[,DIR]` uses it.
//
// # Operations
//
// Operation(session) is the list's "operation" cell ("query GetUser", "pkg.Svc/Method");
// GraphQLOps and RPCMethod back the filter's gql: and grpc: terms.
package content
