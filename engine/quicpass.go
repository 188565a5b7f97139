package engine

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"inspector/engine/session"
)

// QUIC pass-through: see the section "QUIC pass-through" in doc.go.

// maxQUICFlows bounds concurrent pass-through flows; datagrams of further new client
// addresses are dropped (QUIC clients retransmit, and fall back to TCP).
const maxQUICFlows = 4096

// quicRelay relays datagrams between the HTTP/3 listener's clients and one origin.
type quicRelay struct {
	e      *Engine
	conn   net.PacketConn // the HTTP/3 listener
	target string         // the origin's host:port (UDP)
	idle   time.Duration

	mu     sync.Mutex
	flows  map[string]*quicFlow // by client address
	closed bool
	wg     sync.WaitGroup
}

// quicFlow is one client address's relay; up is connected to the origin.
type quicFlow struct {
	client   net.Addr
	up       net.Conn
	s        *session.Session
	capture  bool
	last     atomic.Int64 // unix nanoseconds of the last datagram either way
	fromCli  atomic.Int64
	fromOrig atomic.Int64
}

func newQUICRelay(e *Engine, pc net.PacketConn, target string) *quicRelay {
	return &quicRelay{e: e, conn: pc, target: target, idle: e.cfg.IdleTimeout, flows: map[string]*quicFlow{}}
}

// serve reads client datagrams until the listener closes. It is run by one goroutine.
func (r *quicRelay) serve() {
	buf := make([]byte, 64<<10)
	for {
		n, addr, err := r.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			r.e.cfg.Logf("QUIC pass-through: read: %v", err)
			continue
		}
		f := r.flow(addr)
		if f == nil {
			continue
		}
		if _, err := f.up.Write(buf[:n]); err == nil {
			f.fromCli.Add(int64(n))
			f.last.Store(time.Now().UnixNano())
		}
	}
}

// flow returns the flow of addr, starting one if needed (nil when refused).
func (r *quicRelay) flow(addr net.Addr) *quicFlow {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if f := r.flows[addr.String()]; f != nil {
		return f
	}
	if len(r.flows) >= maxQUICFlows {
		return nil
	}
	now := time.Now()
	f := &quicFlow{client: addr, capture: r.e.capture.Load()}
	f.last.Store(now.UnixNano())
	f.s = &session.Session{
		Started: now,
		Client:  session.Conn{Addr: addr.String(), ConnID: r.e.connIDs.Add(1)},
		Request: session.Request{Method: "QUIC", URL: "udp://" + r.target},
		Flags:   session.FlagTunnel,
		Timings: session.Timings{ClientConnected: now, RequestHeaders: now, ConnectStart: now},
	}
	if f.capture {
		f.s.ID = r.e.newID()
		r.e.publish(Event{Kind: EventBegin, Summary: inflight(f.s)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.e.cfg.DialTimeout)
	up, err := (&net.Dialer{}).DialContext(ctx, "udp", r.target)
	cancel()
	if err != nil {
		f.s.Error = classifyDial(err)
		r.finish(f)
		return nil
	}
	f.up = up
	f.s.Timings.ConnectDone = time.Now()
	f.s.Upstream.Addr = up.RemoteAddr().String()
	f.s.Response = &session.Response{Status: 200, Reason: "QUIC passed through"}
	r.flows[addr.String()] = f
	r.wg.Add(1)
	go r.relayBack(f)
	return f
}

// relayBack copies the origin's datagrams to the client until the flow is idle or closed,
// then ends the flow.
func (r *quicRelay) relayBack(f *quicFlow) {
	defer r.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		deadline := time.Unix(0, f.last.Load()).Add(r.idle)
		_ = f.up.SetReadDeadline(deadline)
		n, err := f.up.Read(buf)
		if n > 0 {
			if _, werr := r.conn.WriteTo(buf[:n], f.client); werr == nil {
				f.fromOrig.Add(int64(n))
				f.last.Store(time.Now().UnixNano())
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, f.last.Load())) < r.idle {
				continue // a client datagram moved the deadline on
			}
			if !errors.As(err, &ne) || !ne.Timeout() {
				if !errors.Is(err, net.ErrClosed) {
					// ICMP unreachable and the like: the origin's port is not answering.
					f.s.Error = &session.Error{Phase: session.PhaseTunnel, Side: session.SideUpstream, Message: err.Error()}
				}
			}
			break
		}
	}
	r.mu.Lock()
	if r.flows[f.client.String()] == f {
		delete(r.flows, f.client.String())
	}
	r.mu.Unlock()
	f.up.Close()
	r.finish(f)
}

// finish completes f's session.
func (r *quicRelay) finish(f *quicFlow) {
	f.s.Request.Body.Size = f.fromCli.Load()
	if f.s.Response != nil {
		f.s.Response.Body.Size = f.fromOrig.Load()
	}
	f.s.Timings.ResponseDone = time.Now()
	if f.capture {
		r.e.publish(Event{Kind: EventComplete, Summary: f.s.Summarize(), Session: f.s})
	}
}

// close stops the relay: the listener closes, every flow ends and is recorded.
func (r *quicRelay) close() {
	r.mu.Lock()
	r.closed = true
	for _, f := range r.flows {
		f.up.Close()
	}
	r.mu.Unlock()
	r.conn.Close()
	r.wg.Wait()
}
