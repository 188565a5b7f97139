package upstream_test

import (
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/internal/upstream"
)

// recTrace records what a transport reports through ConnTrace.
type recTrace struct {
	mu     sync.Mutex
	ids    []uint64
	remote []string
	reused []bool
	wrote  int
}

func (r *recTrace) ConnGot(id uint64, remote string, reused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids, r.remote, r.reused = append(r.ids, id), append(r.remote, remote), append(r.reused, reused)
}

func (r *recTrace) RequestWritten() {
	r.mu.Lock()
	r.wrote++
	r.mu.Unlock()
}

func newUpstream(t *testing.T, proto string, o *et.Origin, reserved func(host, port string) bool) *upstream.Upstream {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(o.Certificate())
	u, err := upstream.New(upstream.Config{Roots: roots, Proto: proto, DialTimeout: 5 * time.Second,
		TLSTimeout: 5 * time.Second, ResponseTimeout: 5 * time.Second, MaxHeaderBytes: 1 << 20, Reserved: reserved})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

func roundTrip(t *testing.T, u *upstream.Upstream, url string, tr upstream.ConnTrace, ct *httptrace.ClientTrace) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if ct != nil {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), ct))
	}
	resp, reason, err := u.RoundTrip(req, tr, false, nil, nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, reason, err
}

// HTTP/3 reports its connection through the ConnTrace it is handed, numbered and marked
// reused on the second request; TCP reports through httptrace, numbered by ConnID.
func TestTransportsReportTheirConnections(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH3, nil)
	u := newUpstream(t, "h3", o, nil)
	tr := &recTrace{}
	for range 2 {
		resp, reason, err := roundTrip(t, u, o.H3URL+"/echo", tr, nil)
		if err != nil || resp.ProtoMajor != 3 || reason == "" {
			t.Fatalf("h3: %v %v %q", resp, err, reason)
		}
	}
	tr.mu.Lock()
	if len(tr.ids) != 2 || tr.ids[0] == 0 || tr.ids[1] != tr.ids[0] || tr.reused[0] || !tr.reused[1] ||
		tr.remote[0] != o.H3Addr || tr.wrote != 2 {
		t.Errorf("h3 trace: ids %v reused %v remote %v wrote %d", tr.ids, tr.reused, tr.remote, tr.wrote)
	}
	h3id := tr.ids[0]
	tr.mu.Unlock()

	// TCP: the connection number comes from httptrace's GotConn through ConnID, from
	// the same counter.
	var id uint64
	ct := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { id = upstream.ConnID(i.Conn) }}
	u2 := newUpstream(t, "auto", o, nil)
	if _, _, err := roundTrip(t, u2, o.URL+"/echo", &recTrace{}, ct); err != nil {
		t.Fatal(err)
	}
	if id == 0 {
		t.Errorf("TCP connection not numbered (h3 one was %d)", h3id)
	}
}

func TestReservedAddressesAreNeverDialed(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH3, nil)
	_, h3port, _ := net.SplitHostPort(o.H3Addr)
	_, tcpPort, _ := net.SplitHostPort(o.Listener.Addr().String())
	reserved := func(host, port string) bool { return port == h3port || port == tcpPort }
	for _, tc := range []struct{ proto, url string }{{"h3", o.H3URL}, {"auto", o.URL}, {"h1", o.URL}, {"h2", o.URL}} {
		u := newUpstream(t, tc.proto, o, reserved)
		if _, _, err := roundTrip(t, u, tc.url+"/echo", &recTrace{}, nil); !errors.Is(err, upstream.ErrReserved) {
			t.Errorf("%s: %v, want ErrReserved", tc.proto, err)
		}
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	if _, err := upstream.New(upstream.Config{Proto: "auto"}); err == nil {
		t.Error("New without roots: no error")
	}
	if _, err := upstream.New(upstream.Config{Roots: x509.NewCertPool(), Proto: "h4"}); err == nil {
		t.Error("New with protocol h4: no error")
	}
}
