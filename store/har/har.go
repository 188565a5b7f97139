// Package har writes and reads HAR 1.2 (HTTP Archive) documents from and to
// session.Session values. It knows nothing of the bbolt store: the store streams sessions
// into a Writer for export, and adds what Read returns for import.
//
// # Mapping
//
// Standard fields follow the HAR 1.2 spec as Chrome and Firefox devtools write them.
// Response content.text is the body with its Content-Encoding removed by content
// (gzip, deflate, br, zstd, stacked; the way browsers export it), and content carries
// "_contentEncoding" naming the codings removed; bodies with other encodings, or that
// fail to decode completely (damaged, cut by the capture cap), are exported as
// transferred, base64, with "_raw": true in content. Import encodes decoded text again
// with the header's codings, so a session holds its body as it travelled. Text bodies (valid UTF-8
// without control characters) are written as text, everything else as base64 with
// "encoding": "base64". Binary request bodies carry "_encoding": "base64" in postData (HAR
// 1.2 has no encoding there). Timings are in milliseconds rounded to microseconds, derived
// from the session's instants; `ssl` is included in `connect` as the spec says; send, wait
// and receive are 0 when unknown, the others -1. A session without a response is exported
// with status 0 and an empty response, as Chrome does for failed requests.
//
// Inspector's own fields carry a `_` prefix: _id, _clientProto, _upstreamProto,
// _clientAddress, _clientConnection, _clientReused, _upstreamReused, _error {phase, side,
// proto, message}, _tls {client, upstream}, _flags (names), _replayOf, _truncated
// {request, response}, _mark, _interim (the 1xx responses before the final one:
// {status, headers, time}), and _webSocketMessages in Chrome's shape
// ({type: send|receive, time: unix seconds, opcode, data}, binary data base64). A session
// without a response also carries Chrome's response._error text.
//
// Export → Read → export yields identical bytes.
package har

import (
	"encoding/json"
)

// Creator is the creator name written into exported documents.
const Creator = "Inspector"

type harDoc struct {
	Log *harLog `json:"log"`
}

type harLog struct {
	Version string            `json:"version"`
	Creator *harCreator       `json:"creator"`
	Pages   []json.RawMessage `json:"pages,omitempty"`
	Entries []json.RawMessage `json:"entries"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// entry is one HAR entry; field order is the output order.
type entry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         *request    `json:"request"`
	Response        *response   `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         *timings    `json:"timings"`
	ServerIPAddress string      `json:"serverIPAddress,omitempty"`
	Connection      string      `json:"connection,omitempty"`
	Comment         string      `json:"comment,omitempty"`
	ID              uint64      `json:"_id,omitempty"`
	ClientProto     string      `json:"_clientProto"`
	UpstreamProto   string      `json:"_upstreamProto"`
	ClientAddress   string      `json:"_clientAddress,omitempty"`
	ClientConn      string      `json:"_clientConnection,omitempty"`
	ClientReused    bool        `json:"_clientReused,omitempty"`
	UpstreamReused  bool        `json:"_upstreamReused,omitempty"`
	Error           *harError   `json:"_error,omitempty"`
	TLS             *harTLSPair `json:"_tls,omitempty"`
	Flags           []string    `json:"_flags,omitempty"`
	ReplayOf        uint64      `json:"_replayOf,omitempty"`
	Truncated       *truncated  `json:"_truncated,omitempty"`
	Mark            string      `json:"_mark,omitempty"`
	WSMessages      []wsMessage `json:"_webSocketMessages,omitempty"`
	Interim         []interim   `json:"_interim,omitempty"`
	fingerprints
}

// interim is an informational (1xx) response the origin sent before the final one
// (session.Interim): its status, headers and arrival time (ISO 8601, as startedDateTime).
type interim struct {
	Status  int         `json:"status"`
	Headers []nameValue `json:"headers"`
	Time    string      `json:"time"`
}

// fingerprints are the legs' fingerprints (session.Fingerprint): JA4, JA3 (MD5) and the
// Akamai HTTP/2 fingerprint of the client leg as _ja4, _ja3, _h2fp, of the upstream leg
// as _upstreamJa4, _upstreamJa3, _upstreamH2fp, and how the upstream ClientHello was made
// as _fingerprintMirror.
type fingerprints struct {
	JA4      string `json:"_ja4,omitempty"`
	JA3      string `json:"_ja3,omitempty"`
	JA3Raw   string `json:"_ja3Raw,omitempty"`
	H2FP     string `json:"_h2fp,omitempty"`
	UpJA4    string `json:"_upstreamJa4,omitempty"`
	UpJA3    string `json:"_upstreamJa3,omitempty"`
	UpJA3Raw string `json:"_upstreamJa3Raw,omitempty"`
	UpH2FP   string `json:"_upstreamH2fp,omitempty"`
	Mirror   string `json:"_fingerprintMirror,omitempty"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Expires  string `json:"expires,omitempty"`
	HTTPOnly bool   `json:"httpOnly,omitempty"`
	Secure   bool   `json:"secure,omitempty"`
	SameSite string `json:"sameSite,omitempty"`
}

type request struct {
	Method      string      `json:"method"`
	URL         string      `json:"url"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []cookie    `json:"cookies"`
	Headers     []nameValue `json:"headers"`
	QueryString []nameValue `json:"queryString"`
	PostData    *postData   `json:"postData,omitempty"`
	HeadersSize int64       `json:"headersSize"`
	BodySize    int64       `json:"bodySize"`
}

type postData struct {
	MimeType string      `json:"mimeType"`
	Params   []nameValue `json:"params,omitempty"`
	Text     string      `json:"text"`
	Encoding string      `json:"_encoding,omitempty"`
}

type response struct {
	Status      int         `json:"status"`
	StatusText  string      `json:"statusText"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []cookie    `json:"cookies"`
	Headers     []nameValue `json:"headers"`
	Content     content     `json:"content"`
	RedirectURL string      `json:"redirectURL"`
	HeadersSize int64       `json:"headersSize"`
	BodySize    int64       `json:"bodySize"`
	// Error is Chrome's failure text, set (like Chrome does) when there is no response.
	Error string `json:"_error,omitempty"`
}

type content struct {
	Size        int64  `json:"size"`
	Compression int64  `json:"compression,omitempty"`
	MimeType    string `json:"mimeType"`
	Text        string `json:"text,omitempty"`
	Encoding    string `json:"encoding,omitempty"`
	Raw         bool   `json:"_raw,omitempty"`
	// ContentEncoding is the Content-Encoding that was removed to write Text ("br",
	// "gzip, br"); HAR's own encoding field is only for base64.
	ContentEncoding string `json:"_contentEncoding,omitempty"`
}

type timings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	SSL     float64 `json:"ssl"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

type harError struct {
	Phase   string `json:"phase"`
	Side    string `json:"side"`
	Proto   string `json:"proto,omitempty"`
	Message string `json:"message"`
}

type harTLSPair struct {
	Client   *harTLS `json:"client,omitempty"`
	Upstream *harTLS `json:"upstream,omitempty"`
}

type harTLS struct {
	Version      string   `json:"version"`
	CipherSuite  string   `json:"cipherSuite"`
	ServerName   string   `json:"serverName,omitempty"`
	ALPN         string   `json:"alpn,omitempty"`
	Resumed      bool     `json:"resumed,omitempty"`
	Certificates [][]byte `json:"certificates,omitempty"` // DER, base64 in JSON
}

type truncated struct {
	Request  bool `json:"request,omitempty"`
	Response bool `json:"response,omitempty"`
}

type wsMessage struct {
	Type   string  `json:"type"` // "send" (from the client) or "receive"
	Time   float64 `json:"time"` // unix seconds
	Opcode int     `json:"opcode"`
	Data   string  `json:"data"`
	Size   int64   `json:"_size,omitempty"` // set when the captured data is shorter
}
