package socks

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func run(t *testing.T, in []byte, creds string) (*Request, []byte, error) {
	t.Helper()
	var out bytes.Buffer
	req, err := Handshake(bufio.NewReader(bytes.NewReader(in)), &out, creds)
	return req, out.Bytes(), err
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var (
	greetNone = []byte{5, 1, MethodNone}
	greetUser = []byte{5, 2, MethodNone, MethodUserPass}
	okNone    = []byte{5, MethodNone}
	okUser    = []byte{5, MethodUserPass}
)

func connect(atyp byte, addr []byte, port uint16) []byte {
	return cat([]byte{5, CmdConnect, 0, atyp}, addr, []byte{byte(port >> 8), byte(port)})
}

func TestHandshakeTargets(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		req    []byte
		target string
		domain bool
	}{
		"domain": {connect(atypDomain, append([]byte{11}, "example.com"...), 443), "example.com:443", true},
		"ipv4":   {connect(atypIPv4, []byte{127, 0, 0, 1}, 8443), "127.0.0.1:8443", false},
		"ipv6":   {connect(atypIPv6, append(bytes.Repeat([]byte{0}, 15), 1), 80), "[::1]:80", false},
	} {
		req, out, err := run(t, cat(greetNone, c.req), "")
		if err != nil || req.Target != c.target || req.Domain != c.domain || !bytes.Equal(out, okNone) {
			t.Errorf("%s: %+v %x %v, want %s", name, req, out, err, c.target)
		}
	}
}

func TestHandshakeUserPass(t *testing.T) {
	t.Parallel()
	auth := func(u, p string) []byte {
		return cat([]byte{1, byte(len(u))}, []byte(u), []byte{byte(len(p))}, []byte(p))
	}
	req, out, err := run(t, cat(greetUser, auth("me", "pw"), connect(atypIPv4, []byte{10, 0, 0, 1}, 443)), "me:pw")
	if err != nil || req.Target != "10.0.0.1:443" || !bytes.Equal(out, cat(okUser, []byte{1, 0})) {
		t.Fatalf("good credentials: %+v %x %v", req, out, err)
	}
	_, out, err = run(t, cat(greetUser, auth("me", "wrong"), connect(atypIPv4, []byte{10, 0, 0, 1}, 443)), "me:pw")
	if !errors.Is(err, ErrAuth) || !bytes.Equal(out, cat(okUser, []byte{1, 1})) {
		t.Fatalf("bad password: %x %v, want status 1", out, err)
	}
	_, out, err = run(t, cat(greetUser, []byte{9, 2}, []byte("me"), []byte{2}, []byte("pw")), "me:pw")
	if !errors.Is(err, ErrAuth) || !bytes.Equal(out, cat(okUser, []byte{1, 1})) {
		t.Fatalf("bad auth version: %x %v", out, err)
	}
	_, out, err = run(t, cat(greetNone, connect(atypIPv4, []byte{10, 0, 0, 1}, 443)), "me:pw")
	if !errors.Is(err, ErrNoMethod) || !bytes.Equal(out, []byte{5, MethodNoAcceptable}) {
		t.Fatalf("no-auth client when auth is set: %x %v, want 05 ff", out, err)
	}
	_, out, err = run(t, cat([]byte{5, 1, MethodUserPass}), "")
	if !errors.Is(err, ErrNoMethod) || !bytes.Equal(out, []byte{5, MethodNoAcceptable}) {
		t.Fatalf("user/pass only without auth set: %x %v, want 05 ff", out, err)
	}
}

func TestHandshakeRefusals(t *testing.T) {
	t.Parallel()
	reply := func(code byte) []byte { return cat(okNone, []byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }
	for name, c := range map[string]struct {
		in   []byte
		err  error
		want []byte
	}{
		"socks4":        {[]byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, ErrVersion, []byte{5, MethodNoAcceptable}},
		"bind":          {cat(greetNone, []byte{5, CmdBind, 0, atypIPv4, 1, 2, 3, 4, 0, 80}), ErrCommand, reply(ReplyCommandNotSupported)},
		"udp associate": {cat(greetNone, []byte{5, CmdUDPAssociate, 0, atypIPv4, 0, 0, 0, 0, 0, 0}), ErrCommand, reply(ReplyCommandNotSupported)},
		"address type":  {cat(greetNone, []byte{5, CmdConnect, 0, 9, 1, 2}), ErrAddressType, reply(ReplyAddressNotSupported)},
		"request v4":    {cat(greetNone, []byte{4, CmdConnect, 0, atypIPv4, 1, 2, 3, 4, 0, 80}), ErrVersion, reply(ReplyGeneralFailure)},
	} {
		req, out, err := run(t, c.in, "")
		if req != nil || !errors.Is(err, c.err) || !bytes.Equal(out, c.want) {
			t.Errorf("%s: %+v %x %v, want %x and %v", name, req, out, err, c.want, c.err)
		}
	}
	if _, _, err := run(t, []byte{5, 2, 0}, ""); err == nil {
		t.Error("truncated greeting accepted")
	}
}
