package engine

import (
	"bytes"
	"encoding/hex"
	"io"
	"sync"

	"inspector/engine/session"
)

// The key log. Every TLS handshake of both legs (the client leg, where Inspector is the
// server, TCP and QUIC; the upstream leg, where it is the client) writes its secrets as
// NSS key-log lines to keyLogWriter. It passes them to the key-log file while one is set
// (Config.KeyLog, SetKeyLog: the --keylog flag and the window's switch), and keeps the
// lines of the latest connections in memory, by client random, so that a session's own
// keys can be copied from its TLS tab (SessionKeys).
//
// Where the per-session secrets live: in this process's memory only, bounded (the lines
// of the last keyLogConns handshakes, the two randoms of the last keyLogSessions
// sessions). They are never stored with the session, so they never reach a HAR, an
// export or an MCP answer, and they are gone after a restart.
const (
	keyLogConns    = 8192
	keyLogSessions = 32768
)

// keyLogWriter serialises key-log lines from the handshakes of every connection, both
// legs, into the key-log file (when set) and the in-memory table.
type keyLogWriter struct {
	mu sync.Mutex
	w  io.Writer // the key-log file; nil: off

	lines map[[32]byte][]string // client random -> its NSS lines (newline included)
	order [][32]byte            // randoms in lines, oldest first (a ring of keyLogConns)
	next  int

	sessions map[session.ID][2][32]byte // session -> client leg, upstream leg random (zero: none)
	sorder   []session.ID
	snext    int
}

func newKeyLog(w io.Writer) *keyLogWriter {
	return &keyLogWriter{w: w, lines: map[[32]byte][]string{}, sessions: map[session.ID][2][32]byte{}}
}

// Write takes what crypto/tls (and quic-go, and utls) write: one or more whole lines.
func (k *keyLogWriter) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for line := range bytes.Lines(p) {
		k.remember(line)
	}
	if k.w == nil {
		return len(p), nil
	}
	return k.w.Write(p)
}

// remember files one "LABEL CLIENT_RANDOM SECRET" line under its client random.
func (k *keyLogWriter) remember(line []byte) {
	f := bytes.Fields(line)
	if len(f) != 3 || len(f[1]) != 64 {
		return
	}
	var r [32]byte
	if _, err := hex.Decode(r[:], f[1]); err != nil {
		return
	}
	if _, ok := k.lines[r]; !ok {
		admit(k.lines, &k.order, &k.next, keyLogConns, r)
	}
	l := string(line)
	if l[len(l)-1] != '\n' {
		l += "\n"
	}
	k.lines[r] = append(k.lines[r], l)
}

// admit makes room for the new key key in m, whose keys order holds oldest first as a
// ring of n: when full, the oldest key (at *next) goes.
func admit[K comparable, V any](m map[K]V, order *[]K, next *int, n int, key K) {
	if len(*order) < n {
		*order = append(*order, key)
		return
	}
	delete(m, (*order)[*next])
	(*order)[*next] = key
	*next = (*next + 1) % n
}

// setFile switches the key-log file (nil: off).
func (k *keyLogWriter) setFile(w io.Writer) {
	k.mu.Lock()
	k.w = w
	k.mu.Unlock()
}

func (k *keyLogWriter) on() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.w != nil
}

// note records the client random of one leg of a session (leg 0: client, 1: upstream).
func (k *keyLogWriter) note(id session.ID, leg int, random []byte) {
	if len(random) != 32 || id == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.sessions[id]
	if !ok {
		admit(k.sessions, &k.sorder, &k.snext, keyLogSessions, id)
	}
	copy(v[leg][:], random)
	k.sessions[id] = v
}

// keys returns the NSS lines of a session's client and upstream legs (nil: not known).
func (k *keyLogWriter) keys(id session.ID) (client, upstream []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.sessions[id]
	if !ok {
		return nil, nil
	}
	var zero [32]byte
	if v[0] != zero {
		client = append(client, k.lines[v[0]]...)
	}
	if v[1] != zero {
		upstream = append(upstream, k.lines[v[1]]...)
	}
	return client, upstream
}

// helloRandom is the client random of a ClientHello record (5-byte record header,
// handshake type and length, legacy version, then the 32 random bytes).
func helloRandom(record []byte) []byte {
	if len(record) < 43 || record[0] != 0x16 || record[5] != 0x01 {
		return nil
	}
	return record[11:43]
}

// SetKeyLog switches the key-log file at run time (nil: off); the caller owns w and
// closes the one it replaces after this returns.
func (e *Engine) SetKeyLog(w io.Writer) { e.keyLog.setFile(w) }

// KeyLogging says whether a key-log file is set.
func (e *Engine) KeyLogging() bool { return e.keyLog.on() }

// SessionKeys returns the NSS key-log lines of a session's client leg (Inspector as the
// server) and upstream leg (Inspector as the client), from memory: nil for a leg without
// TLS, one served over QUIC or a session older than the table holds (see above).
func (e *Engine) SessionKeys(id session.ID) (client, upstream []string) {
	return e.keyLog.keys(id)
}
