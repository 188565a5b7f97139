package engine

import (
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"

	"inspector/engine/internal/conn"
)

// DefaultMaxConns is the default cap on concurrent client connections (Config.MaxConns).
// The cap, eviction at it and the count of connections are the connection table's
// (engine/internal/conn).
const DefaultMaxConns = conn.DefaultMax

// slotOf finds the client connection's entry in the connection table under the layers
// the engine puts on it (sniffing, TLS, framing, frame taps), or nil.
func slotOf(c net.Conn) *conn.Conn { return conn.Of(c) }

// checkProxyAuth enforces Config.ProxyAuth on a request to the proxy listener (CONNECT or
// absolute-form). Without valid Basic credentials it answers 407 and returns false. With
// them it removes Proxy-Authorization, so credentials never reach origins or sessions.
func (e *Engine) checkProxyAuth(w http.ResponseWriter, r *http.Request) bool {
	want := e.cfg.ProxyAuth
	if want == "" {
		return true
	}
	got := r.Header.Get("Proxy-Authorization")
	scheme, cred, _ := strings.Cut(got, " ")
	ok := false
	if strings.EqualFold(scheme, "Basic") {
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
			ok = subtle.ConstantTimeCompare(dec, []byte(want)) == 1
		}
	}
	r.Header.Del("Proxy-Authorization")
	if !ok {
		w.Header().Set("Proxy-Authenticate", `Basic realm="Inspector"`)
		w.Header().Set("Connection", "close")
		http.Error(w, "Inspector needs proxy credentials (Proxy-Authorization: Basic). Remote access turns them on; see the password file in the data directory.", http.StatusProxyAuthRequired)
		return false
	}
	return true
}

// hold makes Close cut c until release is called: for a connection outside the
// connection table between its accept and its hand-off, such as during a handshake a
// client may stall. One in the table (LimitListener's) is cut by Close anyway.
func (e *Engine) hold(c net.Conn) (release func()) { return e.conns.Hold(c) }
