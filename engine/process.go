package engine

import (
	"net"
	"net/netip"
	"time"

	"inspector/engine/session"
)

// processWait bounds how long the observers' deliverer waits for a connection's process
// lookup (counted from the connection's accept) before storing its sessions without it.
// A lookup costs a few milliseconds; one that hangs (a stuck lsof) delays the store once
// per connection by at most this.
var processWait = 500 * time.Millisecond

// procLookup is the process lookup of one client connection: started at accept, read by
// the connection's sessions without waiting (the request path) or with a bounded wait
// (the observers' deliverer, off the request path).
type procLookup struct {
	done     chan struct{} // closed when pid and name are set
	deadline time.Time
	pid      int
	name     string
}

// lookupProcess starts the process lookup of the accepted client connection c, or
// returns nil when the engine has no ProcessOf or c's addresses are not TCP.
func (e *Engine) lookupProcess(c net.Conn) *procLookup {
	if e.cfg.ProcessOf == nil || c == nil {
		return nil
	}
	client, ok1 := tcpAddrPort(c.RemoteAddr())
	proxy, ok2 := tcpAddrPort(c.LocalAddr())
	if !ok1 || !ok2 {
		return nil
	}
	p := &procLookup{done: make(chan struct{}), deadline: time.Now().Add(processWait)}
	of := e.cfg.ProcessOf
	go func() {
		defer close(p.done)
		if pid, name, err := of(client, proxy); err == nil {
			p.pid, p.name = pid, name
		}
	}()
	return p
}

func tcpAddrPort(a net.Addr) (netip.AddrPort, bool) {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
	}
	ap, err := netip.ParseAddrPort(a.String())
	return ap, err == nil
}

// fill sets c's PID and Process if the lookup has its answer; it never waits.
func (p *procLookup) fill(c *session.Conn) {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		c.PID, c.Process = p.pid, p.name
	default:
	}
}

// wait waits for the lookup's answer until its deadline; it reports whether it came.
func (p *procLookup) wait() bool {
	select {
	case <-p.done:
		return true
	default:
	}
	d := time.Until(p.deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// withProcess returns ev for the observers with the client's process filled in when the
// session lacks it and the lookup answers in time (off the request path: the observers'
// deliverer calls it). The session is copied, not changed: the live subscribers got the
// same pointer.
func withProcess(ev Event) Event {
	s := ev.Session
	if ev.proc == nil || s == nil || s.Client.PID != 0 || s.Client.Process != "" || !ev.proc.wait() {
		return ev
	}
	if ev.proc.pid == 0 && ev.proc.name == "" {
		return ev
	}
	cp := *s
	cp.Client.PID, cp.Client.Process = ev.proc.pid, ev.proc.name
	ev.Session = &cp
	ev.Summary.PID, ev.Summary.Process = cp.Client.PID, cp.Client.Process
	return ev
}
