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
package content
