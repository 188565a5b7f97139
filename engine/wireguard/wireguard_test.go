package wireguard_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/netstack"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/transparent"
	"inspector/engine/wireguard"
	"inspector/rootca"
)

// hostIP is a non-loopback IPv4 address of this machine: a device's traffic to the
// instance's own loopback is dropped by the stack (as it should be), so origins listen on
// this one.
func hostIP(t testing.TB) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("skipped: this machine has no non-loopback IPv4 address for a test origin")
	return ""
}

// startOrigin is an enginetest origin on hostIP with a certificate for that address.
func startOrigin(t testing.TB, kind string) *et.Origin {
	t.Helper()
	return startOriginWith(t, kind, et.Handler())
}

// startOriginWith is startOrigin serving h.
func startOriginWith(t testing.TB, kind string, h http.Handler) *et.Origin {
	t.Helper()
	ip := hostIP(t)
	ca, err := rootca.Load(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.LeafFor(ip)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	if srv.Listener, err = net.Listen("tcp", ip+":0"); err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	if kind == et.OriginH2TLS {
		srv.EnableHTTP2 = true
	} else {
		srv.TLS.NextProtos = []string{"http/1.1"}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &et.Origin{Server: srv, Kind: kind}
}

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(f string, a ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
	l.mu.Unlock()
}

func (l *logs) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

type wgEnv struct {
	p    *et.Proxy
	keys *wireguard.Keys
	srv  *wireguard.Server
	log  *logs
}

func startWG(t testing.TB, origins ...*et.Origin) *wgEnv {
	t.Helper()
	return startWGWith(t, nil, origins...)
}

// startWGWith is startWG with the engine's config adjusted by mod.
func startWGWith(t testing.TB, mod func(*engine.Config), origins ...*et.Origin) *wgEnv {
	t.Helper()
	p := et.StartProxy(t, mod, origins...)
	env := &wgEnv{p: p, log: &logs{}}
	ts := transparent.New(p.Engine, nil, transparent.Options{Via: "wireguard", Logf: env.log.logf})
	dir := filepath.Join(t.TempDir(), "wireguard")
	keys, err := wireguard.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := keys.Peer("phone"); err != nil {
		t.Fatal(err)
	}
	if err := keys.Save(dir); err != nil {
		t.Fatal(err)
	}
	env.keys = keys
	srv, err := wireguard.Start(keys, ts, wireguard.Options{Logf: env.log.logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	env.srv = srv
	return env
}

// device is a userspace WireGuard client (wireguard-go on a gVisor netstack), as a
// phone would be, with the given private key and tunnel address.
func (env *wgEnv) device(t testing.TB, priv wireguard.Key, addr netip.Addr) *netstack.Net {
	t.Helper()
	return newDevice(t, priv, addr, env.keys.Server.Public(), env.srv.Port())
}

// newDevice is a device that reaches the endpoint with public key pub on UDP port on this
// machine.
func newDevice(t testing.TB, priv wireguard.Key, addr netip.Addr, pub wireguard.Key, port int) *netstack.Net {
	t.Helper()
	tunDev, tnet, err := netstack.CreateNetTUN([]netip.Addr{addr}, []netip.Addr{wireguard.ServerAddr}, 1420)
	if err != nil {
		t.Fatal(err)
	}
	dev := device.NewDevice(tunDev, conn.NewDefaultBind(), device.NewLogger(device.LogLevelSilent, ""))
	cfg := fmt.Sprintf("private_key=%x\npublic_key=%x\nendpoint=127.0.0.1:%d\nallowed_ip=0.0.0.0/0\nallowed_ip=::/0\n",
		priv[:], pub[:], port)
	if err := dev.IpcSet(cfg); err != nil {
		t.Fatal(err)
	}
	if err := dev.Up(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	return tnet
}

func (env *wgEnv) client(tnet *netstack.Net, h2 bool) *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext:       tnet.DialContext,
		TLSClientConfig:   &tls.Config{RootCAs: env.p.CAPool()},
		ForceAttemptHTTP2: h2,
	}}
}

// A device's HTTPS requests through the tunnel are captured and decrypted, named after
// the peer, over HTTP/1.1 and h2.
func TestWireGuardCapturesPeerHTTPS(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{et.OriginH1TLS, et.OriginH2TLS} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			o := startOrigin(t, kind)
			env := startWG(t, o)
			peer := env.keys.Peers[0]
			c := env.client(env.device(t, peer.PrivateKey, peer.Address), kind == et.OriginH2TLS)
			defer c.Transport.(*http.Transport).CloseIdleConnections()
			for i := 0; i < 2; i++ {
				url := fmt.Sprintf("%s/echo?n=%d", o.URL, i)
				resp, err := c.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				s := env.p.Next(t)
				if s.Request.URL != url || s.Response == nil || s.Response.Status != 200 || s.Client.TLS == nil {
					t.Fatalf("session %s %+v %+v", s.Request.URL, s.Response, s.Client)
				}
				if s.Client.Process != "phone" {
					t.Fatalf("process %q, want the peer's name", s.Client.Process)
				}
			}
		})
	}
}

// A device's flows pass the same h1/h2 client × origin matrix checks as the proxy
// listener (engine's TestProtocolMatrix).
func TestWireGuardProtocolMatrix(t *testing.T) {
	t.Parallel()
	et.RunTCPMatrix(t, func(t *testing.T, origin string, mod func(*engine.Config), h2 bool) (*http.Client, string, *et.Proxy) {
		o := startOrigin(t, origin)
		env := startWGWith(t, mod, o)
		peer := env.keys.Peers[0]
		return env.client(env.device(t, peer.PrivateKey, peer.Address), h2), o.URL, env.p
	})
}

// A device whose key is no peer's gets nothing through and nothing is captured; the log
// says so once, however often it retries.
func TestWireGuardUnknownPeer(t *testing.T) {
	t.Parallel()
	o := startOrigin(t, et.OriginH1TLS)
	env := startWG(t, o)
	stranger, _ := wireguard.NewPrivateKey()
	tnet := env.device(t, stranger, netip.MustParseAddr("10.233.0.99"))
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
		c, err := tnet.DialContext(ctx, "tcp", strings.TrimPrefix(o.URL, "https://"))
		cancel()
		if err == nil {
			c.Close()
			t.Fatal("an unknown peer's connection went through")
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for env.log.count("no peer of this instance") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("unknown peer not logged: %q", env.log.lines)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := env.log.count("no peer of this instance"); n != 1 {
		t.Fatalf("logged %d times: %q", n, env.log.lines)
	}
	select {
	case s := <-env.p.Sessions:
		t.Fatalf("captured %s from an unknown peer", s.Request.URL)
	default:
	}
}

// Garbage inside the tunnel (a flow that is neither TLS nor HTTP nor anything its
// destination answers) ends that flow; the device's other flows go on.
func TestWireGuardGarbageFlowDropped(t *testing.T) {
	t.Parallel()
	o := startOrigin(t, et.OriginH2TLS)
	env := startWG(t, o)
	peer := env.keys.Peers[0]
	tnet := env.device(t, peer.PrivateKey, peer.Address)
	hc := env.client(tnet, true)
	defer hc.Transport.(*http.Transport).CloseIdleConnections()
	get := func() {
		t.Helper()
		resp, err := hc.Get(o.URL + "/echo")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		env.p.Next(t)
	}
	get()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := tnet.DialContext(ctx, "tcp", strings.TrimPrefix(o.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("\x16\x03\x01\x00\x05garbage that is no ClientHello\r\n\r\n"))
	_ = g.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(g); err != nil && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "closed") {
		t.Fatalf("the garbage flow was not ended: %v", err)
	}
	g.Close()
	get() // the kept-alive h2 connection
	hc.Transport.(*http.Transport).CloseIdleConnections()
	get() // and a new one
}

// Keys and peers are kept 0600; the client configuration names the server's public key
// and the peer's address.
func TestWireGuardKeysAndConfig(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wg")
	keys, err := wireguard.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, added, err := keys.Peer("laptop")
	if err != nil || !added {
		t.Fatal(added, err)
	}
	if err := keys.Save(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, wireguard.KeysFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keys file mode %v %v", fi.Mode(), err)
	}
	again, err := wireguard.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	q, added, _ := again.Peer("laptop")
	if added || q != p || again.Server != keys.Server {
		t.Fatal("keys not kept")
	}
	p2, _, _ := again.Peer("phone")
	if p2.Address == p.Address {
		t.Fatal("two peers share an address")
	}
	cfg := again.ClientConfig(p, "192.0.2.1:51820")
	for _, want := range []string{"PrivateKey = " + p.PrivateKey.String(), "PublicKey = " + keys.Server.Public().String(), "Address = " + p.Address.String() + "/32", "Endpoint = 192.0.2.1:51820"} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("config lacks %q:\n%s", want, cfg)
		}
	}
	if _, _, err := again.Peer("bad/name"); err == nil {
		t.Fatal("a bad name was taken")
	}
	os.WriteFile(filepath.Join(dir, wireguard.KeysFile), []byte("{"), 0o600)
	if _, err := wireguard.LoadKeys(dir); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged keys: %v", err)
	}
}

// A device's connection whose destination is the instance itself (its proxy listener,
// reached at the machine's address, as a phone on the same network would) is refused,
// not looped, and logged.
func TestWireGuardLoopRefused(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"hostIP", "0.0.0.0:0"} {
		t.Run(listen, func(t *testing.T) {
			t.Parallel()
			ip := hostIP(t)
			addr := listen
			if listen == "hostIP" {
				addr = ip + ":0"
			}
			env := startWGWith(t, func(c *engine.Config) { c.Listen, c.AllowRemote = addr, true })
			_, port, _ := net.SplitHostPort(env.p.Engine.Addr())
			peer := env.keys.Peers[0]
			tnet := env.device(t, peer.PrivateKey, peer.Address)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := tnet.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", net.JoinHostPort(ip, port), net.JoinHostPort(ip, port))
			n, err := c.Read(make([]byte, 1))
			c.Close()
			if n != 0 || err == nil {
				t.Fatalf("the looped connection was served (%d bytes, %v)", n, err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for env.log.count("is Inspector itself") == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("loop not logged: %q", env.log.lines)
				}
				time.Sleep(10 * time.Millisecond)
			}
			select {
			case s := <-env.p.Sessions:
				t.Fatalf("a looped connection made a session: %s", s.Request.URL)
			default:
			}
		})
	}
}
