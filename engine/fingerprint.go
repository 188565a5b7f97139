package engine

import (
	"crypto/tls"
	"errors"
	"sync"

	fpr "inspector/engine/internal/fingerprint"
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

// clientHello returns the client's parsed ClientHello for the upstream to mirror, or
// why there is none.
func (c *connInfo) clientHello() (*fpr.Hello, error) {
	if c.fpRec == nil || c.fpRec.hello == nil {
		return nil, errNoHello
	}
	c.fingerprint()
	return c.fpRec.parsed, c.fpRec.helloOK
}

var errNoHello = errors.New("the client sent no ClientHello (not TLS)")
