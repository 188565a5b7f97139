// Package socks is the server side of the SOCKS5 handshake: RFC 1928 method negotiation
// and request, and RFC 1929 user/password authentication. It only reads and writes the
// handshake; what happens to the connection after a CONNECT is the caller's business.
package socks

import (
	"bufio"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// Protocol constants (RFC 1928 section 3-6, RFC 1929 section 2).
const (
	Version5 = 0x05

	MethodNone         = 0x00
	MethodUserPass     = 0x02
	MethodNoAcceptable = 0xff

	CmdConnect      = 0x01
	CmdBind         = 0x02
	CmdUDPAssociate = 0x03

	atypIPv4   = 0x01
	atypDomain = 0x03
	atypIPv6   = 0x04

	ReplySucceeded           = 0x00
	ReplyGeneralFailure      = 0x01
	ReplyNotAllowed          = 0x02
	ReplyNetworkUnreachable  = 0x03
	ReplyHostUnreachable     = 0x04
	ReplyConnectionRefused   = 0x05
	ReplyTTLExpired          = 0x06
	ReplyCommandNotSupported = 0x07
	ReplyAddressNotSupported = 0x08

	authVersion = 0x01
	authOK      = 0x00
	authFailed  = 0x01
)

// Errors of Handshake; each has already been answered with the RFC's code when returned.
var (
	ErrVersion     = errors.New("socks: not SOCKS version 5")
	ErrNoMethod    = errors.New("socks: no acceptable authentication method")
	ErrAuth        = errors.New("socks: bad user name or password")
	ErrCommand     = errors.New("socks: command not supported (only CONNECT is)")
	ErrAddressType = errors.New("socks: address type not supported")
)

// Request is a client's CONNECT request.
type Request struct {
	// Target is host:port; host is a domain name when the client sent one (Domain), else an
	// IP literal.
	Target string
	Domain bool
}

// Handshake negotiates with a SOCKS5 client on rw. With creds empty it offers no
// authentication; with creds "user:password" it demands RFC 1929 user/password and those.
// It returns the CONNECT request without answering it: the caller calls Reply. On any
// error the client has been sent the RFC's failure reply (where the protocol has one) and
// the caller must close the connection.
//
// br must read from the connection rw writes to; it may read ahead (the bytes after the
// request are the client's first data).
func Handshake(br *bufio.Reader, w io.Writer, creds string) (*Request, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, fmt.Errorf("socks: greeting: %w", err)
	}
	if hdr[0] != Version5 {
		// A SOCKS4 client or something that is no SOCKS at all: a v5 "no acceptable
		// methods" answer tells a v5-capable client what went wrong.
		w.Write([]byte{Version5, MethodNoAcceptable})
		return nil, fmt.Errorf("%w (version byte %#x)", ErrVersion, hdr[0])
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return nil, fmt.Errorf("socks: greeting methods: %w", err)
	}
	want := byte(MethodNone)
	if creds != "" {
		want = MethodUserPass
	}
	offered := false
	for _, m := range methods {
		offered = offered || m == want
	}
	if !offered {
		w.Write([]byte{Version5, MethodNoAcceptable})
		if want == MethodUserPass {
			return nil, fmt.Errorf("%w: user/password required (--proxy-auth), client offered %x", ErrNoMethod, methods)
		}
		return nil, fmt.Errorf("%w: client offered %x, Inspector needs none", ErrNoMethod, methods)
	}
	if _, err := w.Write([]byte{Version5, want}); err != nil {
		return nil, err
	}
	if want == MethodUserPass {
		if err := userPass(br, w, creds); err != nil {
			return nil, err
		}
	}
	return readRequest(br, w)
}

// userPass runs RFC 1929: VER=1 ULEN UNAME PLEN PASSWD, answered VER STATUS.
func userPass(br *bufio.Reader, w io.Writer, creds string) error {
	ver, err := br.ReadByte()
	if err != nil {
		return fmt.Errorf("socks: auth: %w", err)
	}
	if ver != authVersion {
		w.Write([]byte{authVersion, authFailed})
		return fmt.Errorf("%w: auth version %#x, want 1", ErrAuth, ver)
	}
	user, err := readShort(br)
	if err != nil {
		return fmt.Errorf("socks: auth: %w", err)
	}
	pass, err := readShort(br)
	if err != nil {
		return fmt.Errorf("socks: auth: %w", err)
	}
	got := append(append(user, ':'), pass...)
	if subtle.ConstantTimeCompare(got, []byte(creds)) != 1 {
		w.Write([]byte{authVersion, authFailed})
		return ErrAuth
	}
	_, err = w.Write([]byte{authVersion, authOK})
	return err
}

func readShort(br *bufio.Reader) ([]byte, error) {
	n, err := br.ReadByte()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	_, err = io.ReadFull(br, b)
	return b, err
}

// readRequest reads VER CMD RSV ATYP DST.ADDR DST.PORT.
func readRequest(br *bufio.Reader, w io.Writer) (*Request, error) {
	var h [4]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, fmt.Errorf("socks: request: %w", err)
	}
	if h[0] != Version5 {
		Reply(w, ReplyGeneralFailure)
		return nil, fmt.Errorf("%w (request version byte %#x)", ErrVersion, h[0])
	}
	var host string
	domain := false
	switch h[3] {
	case atypIPv4, atypIPv6:
		ip := make(net.IP, 4)
		if h[3] == atypIPv6 {
			ip = make(net.IP, 16)
		}
		if _, err := io.ReadFull(br, ip); err != nil {
			return nil, fmt.Errorf("socks: request address: %w", err)
		}
		host = ip.String()
	case atypDomain:
		name, err := readShort(br)
		if err != nil {
			return nil, fmt.Errorf("socks: request address: %w", err)
		}
		if len(name) == 0 {
			Reply(w, ReplyHostUnreachable)
			return nil, errors.New("socks: empty domain name")
		}
		host, domain = string(name), true
	default:
		Reply(w, ReplyAddressNotSupported)
		return nil, fmt.Errorf("%w (%#x)", ErrAddressType, h[3])
	}
	var p [2]byte
	if _, err := io.ReadFull(br, p[:]); err != nil {
		return nil, fmt.Errorf("socks: request port: %w", err)
	}
	if h[1] != CmdConnect {
		Reply(w, ReplyCommandNotSupported)
		return nil, fmt.Errorf("%w: command %#x", ErrCommand, h[1])
	}
	port := binary.BigEndian.Uint16(p[:])
	if port == 0 {
		Reply(w, ReplyHostUnreachable)
		return nil, errors.New("socks: port 0")
	}
	return &Request{Target: net.JoinHostPort(host, strconv.Itoa(int(port))), Domain: domain}, nil
}

// Reply sends a request's answer with the bound address 0.0.0.0:0 (the client learns
// nothing useful from the proxy's outgoing address, and most clients ignore it).
func Reply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{Version5, code, 0x00, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
