package content

import (
	"net/http"
	"strings"

	"inspector/engine/session"
)

// IsRPC reports whether a request or response header marks a gRPC, gRPC-Web or Connect
// call (by Content-Type, or Connect's protocol-version header).
func IsRPC(h http.Header) bool {
	if h == nil {
		return false
	}
	mt := MediaType(h.Get("Content-Type"))
	return isGRPCType(mt) || h.Get("Connect-Protocol-Version") != "" && (mt == "application/proto" || mt == "application/json")
}

// RPCMethod returns "package.Service/Method" for a gRPC, gRPC-Web or Connect session
// (its request path, checked to have that shape); ok is false for other sessions.
func RPCMethod(s *session.Session) (method string, ok bool) {
	if s == nil || !(IsRPC(s.Request.Header) || s.Response != nil && IsRPC(s.Response.Header)) {
		return "", false
	}
	p := grpcMethodPath(s.Request.URL)
	svc, m, found := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if !found || svc == "" || m == "" || strings.Contains(m, "/") {
		return "", false
	}
	return svc + "/" + m, true
}

// GraphQLOps returns the GraphQL operations of a session's request (POST body, possibly
// content-encoded, or GET ?query=); nil when it is not a GraphQL request.
func GraphQLOps(s *session.Session) []GraphQLOp {
	if s == nil {
		return nil
	}
	var body []byte
	if len(s.Request.Body.Data) > 0 {
		dec, _, _, err := Decode(s.Request.Header, s.Request.Body.Data, DefaultLimit)
		if err != nil {
			return nil
		}
		body = dec
	}
	ops, ok := GraphQLRequest(MediaType(s.Request.Header.Get("Content-Type")), body, s.Request.URL)
	if !ok {
		return nil
	}
	return ops
}

// Operation is the list's "operation" cell: "query Name" / "mutation Name" (several of
// a batch joined by ", "), or "pkg.Service/Method" for RPCs, "" otherwise.
func Operation(s *session.Session) string {
	if m, ok := RPCMethod(s); ok {
		return m
	}
	ops := GraphQLOps(s)
	parts := make([]string, 0, len(ops))
	for _, op := range ops {
		if op.Name != "" {
			parts = append(parts, op.Type+" "+op.Name)
		} else {
			parts = append(parts, op.Type)
		}
	}
	return strings.Join(parts, ", ")
}
