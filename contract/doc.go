// Package contract infers API contracts from captured traffic and checks traffic against
// them.
//
// An Inferrer takes completed sessions one at a time (Add) and keeps, per host, a tree of
// path segments whose varying parts become path parameters, and per operation (method +
// path template) the query parameters, security schemes, and request and response body
// schemas seen, each with the number of sessions that support it. Document renders the
// whole as an OpenAPI 3.1 document (github.com/getkin/kin-openapi's model), at any time:
// the window keeps one Inferrer live as traffic arrives.
//
// # Path templates
//
// A segment that looks like an identifier (a number, a UUID, a hex hash, a date, a long
// mixed token) always becomes a parameter. A segment that is a word is kept as written
// unless its parent has seen many different words at that place (SlugThreshold, higher for
// plain words than for slugs with digits or dashes), so a fixed word is never templated
// because a sample is small.
//
// # Schemas
//
// JSON bodies are folded into a schema per operation, status code and media type: types
// (with "null" in the type list where nulls were seen: OpenAPI 3.1), required (present in
// every sample), enums for strings of low cardinality, formats (date-time, date, uuid,
// email, uri, int64), arrays and nested objects. Conflicting types for one field give a
// oneOf with a count per branch (integer and number widen to number). Depth, properties
// per object and array items read per sample are bounded; a body cut by a bound, not JSON,
// or truncated by the capture limit is counted as skipped, never fatal.
//
// # Bounds and memory
//
// Memory grows with the number of distinct operations and fields, not with the number of
// sessions: sessions are folded in and dropped, so a store of any size can be streamed
// through Add.
//
// # Safety
//
// Examples are taken from the first sample of each body, with secret-looking values
// (fields named like password, token, secret or key; JWTs; bearer values) replaced.
package contract
