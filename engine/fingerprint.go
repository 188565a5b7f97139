package engine

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync"

	fpr "inspector/engine/internal/fingerprint"
	"inspector/engine/internal/upstream"
	"inspector/engine/session"
)

// The client leg's fingerprint. A client connection records the ClientHello records it
// reads before the TLS handshake (clientConn.rec) and, on HTTP/2, the opening of the
// connection up to its first request's headers (recTLSConn); the first request computes
// the fingerprint once for all sessions on the connection (connInfo.fingerprint).

// clientFP is a client connection's recordings and what was computed from them.
type clientFP struct {
	hello   *fpr.Recorder // the ClientHello records (nil: no TLS)
	h2      *fpr.Recorder // the HTTP/2 opening (nil: not HTTP/2)
	once    sync.Once
	fp      *session.Fingerprint
	parsed  *fpr.Hello
	helloOK error // why the ClientHello could not be parsed (nil: it was)
	mirror  *upstream.Mirror
}

// maxH2Opening bounds the recorded HTTP/2 opening (preface, SETTINGS, WINDOW_UPDATE,
// PRIORITY frames and the first HEADERS block).
const maxH2Opening = 16 << 10

func newHelloRecorder() *fpr.Recorder {
	return fpr.NewRecorder(fpr.MaxHello, fpr.HelloComplete)
}

func newH2Recorder() *fpr.Recorder {
	return fpr.NewRecorder(maxH2Opening, fpr.H2Complete)
}

// recTLSConn records what is read from a decrypted client connection (the HTTP/2
// opening); it keeps *tls.Conn's methods (ConnectionState for x/net/http2).
type recTLSConn struct {
	*tls.Conn
	rec *fpr.Recorder
}

func (c *recTLSConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.rec.Done() {
		c.rec.Add(p[:n])
	}
	return n, err
}

// fingerprint returns the connection's fingerprint (nil when nothing was recorded),
// computing it at the first call: by the first request the ClientHello and the HTTP/2
// opening have been read.
func (c *connInfo) fingerprint() *session.Fingerprint {
	f := c.fpRec
	if f == nil {
		return nil
	}
	f.once.Do(func() {
		defer func() {
			if f.parsed != nil {
				f.mirror = upstream.NewMirror(f.parsed)
			}
		}()
		fp := &session.Fingerprint{}
		if f.hello != nil {
			h, err := fpr.ParseRecords(f.hello.Bytes())
			f.parsed, f.helloOK = h, err
			if err == nil {
				fp.JA3Raw, fp.JA3 = h.JA3()
				fp.JA4 = h.JA4()
			}
		}
		if f.h2 != nil {
			if o, err := fpr.ParseH2Opening(f.h2.Bytes()); err == nil {
				fp.H2 = o.Akamai()
			}
		}
		if *fp != (session.Fingerprint{}) {
			f.fp = fp
		}
	})
	return f.fp
}

// fpPolicy is the ClientHello policy a hook set for one request (Flow.SetFingerprint).
type fpPolicy struct {
	mode string // "mirror" or "go"; "" when no hook set one
	why  string // who asked (a rule's name)
}

// SetFingerprint sets the ClientHello policy of the flow's origin connection, for a hook
// of the request stages (the rules' fingerprint kind): "mirror" (the client's, even when
// --fingerprint go or --fingerprint-go says otherwise) or "go" (Go's own). why names who
// asked; the session records it with the reason. The last call wins.
func (f *Flow) SetFingerprint(policy, why string) error {
	switch policy {
	case "mirror", "go":
	default:
		return fmt.Errorf("unknown fingerprint policy %q (want mirror or go)", policy)
	}
	f.fingerprint = fpPolicy{mode: policy, why: why}
	return nil
}

// clientRandom is the client random of the connection's ClientHello (nil: no TLS, or
// not parsed), the key of its secrets in the key log.
func (c *connInfo) clientRandom() []byte {
	if c.fingerprint(); c.fpRec == nil || c.fpRec.parsed == nil {
		return nil
	}
	return helloRandom(c.fpRec.parsed.Record)
}

// upstreamOpening is what an origin connection's opening gave, computed once per
// connection: its fingerprint and the client random of its ClientHello.
type upstreamOpening struct {
	fp     *session.Fingerprint
	random []byte
}

// mirror returns the client's ClientHello for the upstream to mirror, or why there is
// none (then the origin gets Go's ClientHello). A hook's policy (x.fp) comes before the
// command line's.
func (x *exchange) mirror(req *http.Request) (*upstream.Mirror, string) {
	e, c := x.e, x.info
	if req.URL.Scheme != "https" {
		return nil, ""
	}
	if _, sent := req.Context().Value(sendKey{}).(*sendState); sent {
		return nil, "Go's ClientHello: sent by Inspector (composer, replay), no client to mirror"
	}
	switch {
	case x.fp.mode == "go":
		return nil, "Go's ClientHello: " + x.fp.why
	case x.fp.mode == "mirror":
	case e.cfg.Fingerprint == "go":
		return nil, "Go's ClientHello: --fingerprint go"
	case matchAny(e.cfg.FingerprintGo, req.URL.Hostname()):
		return nil, "Go's ClientHello: --fingerprint-go lists this host"
	}
	if c.fpRec == nil || c.fpRec.hello == nil {
		return nil, "Go's ClientHello: the client's request came without TLS"
	}
	c.fingerprint()
	f := c.fpRec
	if f.helloOK != nil {
		return nil, "Go's ClientHello: the client's could not be parsed (" + f.helloOK.Error() + ")"
	}
	return f.mirror, ""
}

// upstreamFingerprint records the fingerprint of the origin connection the response came
// on (computed once per connection); why says why Go's ClientHello was asked for.
func (x *exchange) upstreamFingerprint(why string) {
	x.tr.mu.Lock()
	conn := x.tr.conn
	x.tr.mu.Unlock()
	if conn == nil {
		return
	}
	v := upstream.Remember(conn, func(o upstream.Opening) (any, bool) {
		fp := &session.Fingerprint{Mirror: o.Mirror}
		var random []byte
		if h, err := fpr.ParseRecords(o.Hello); err == nil {
			fp.JA3Raw, fp.JA3 = h.JA3()
			fp.JA4 = h.JA4()
			random = helloRandom(h.Record)
		} else if len(o.Hello) == 0 {
			return nil, true // not TLS
		}
		final := true
		if o.H2 != nil {
			op, err := fpr.ParseH2Opening(o.H2)
			switch {
			case err == nil:
				fp.H2 = op.Akamai()
			case errors.Is(err, fpr.ErrNoHeaders):
				final = false
			}
		}
		return upstreamOpening{fp: fp, random: random}, final
	})
	op, _ := v.(upstreamOpening)
	fp := op.fp
	if fp == nil {
		return
	}
	x.e.keyLog.note(x.s.ID, 1, op.random)
	if fp.Mirror == "" && why != "" {
		c := *fp
		c.Mirror = why
		fp = &c
	}
	x.s.Upstream.Fingerprint = fp
}
