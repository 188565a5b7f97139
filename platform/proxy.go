package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"inspector/platform/osapi"
)

// Proxy is the SystemProxy: it journals the settings of its Backends in DataDir before
// changing them. The zero OwnerPID means the current process owns changes it makes.
type Proxy struct {
	DataDir  string
	Backends []ProxyBackend
	// OwnerPID is recorded in the journal by Enable: the process whose death triggers a
	// restore. 0 means os.Getpid(); -1 means no owning process (the journal stays until
	// Disable), used by 'inspector proxy on' without a running instance.
	OwnerPID int
	// Warn receives non-fatal problems (*Warning from a backend, such as WinINet's refresh
	// notification failing) of calls that otherwise succeeded; nil drops them.
	Warn func(error)
}

// check turns a backend's warning into a call of Warn and nil; other errors stay.
func (p *Proxy) check(err error) error {
	if err != nil && osapi.IsWarning(err) {
		if p.Warn != nil {
			p.Warn(err)
		}
		return nil
	}
	return err
}

var _ SystemProxy = (*Proxy)(nil)

func (p *Proxy) owner() int {
	switch {
	case p.OwnerPID == 0:
		return os.Getpid()
	case p.OwnerPID < 0:
		return 0
	}
	return p.OwnerPID
}

func (p *Proxy) backend(name string) ProxyBackend {
	for _, b := range p.Backends {
		if b.Name() == name {
			return b
		}
	}
	return nil
}

// ErrNoProxyBackend means the system has no proxy settings Inspector knows how to change.
var ErrNoProxyBackend = errors.New("no supported system proxy settings found")

// Enable implements SystemProxy.
func (p *Proxy) Enable(ctx context.Context, addr string) error {
	if err := CheckAddr(addr); err != nil {
		return err
	}
	if len(p.Backends) == 0 {
		return ErrNoProxyBackend
	}
	j, err := ReadJournal(p.DataDir)
	switch {
	case errors.Is(err, ErrNoJournal):
		j = &Journal{}
	case err != nil:
		return err
	}
	// Settings already journaled are the user's originals: keep them, never snapshot our own.
	have := map[string]bool{}
	for _, s := range j.Saved {
		have[s.Backend] = true
	}
	for _, b := range p.Backends {
		if have[b.Name()] {
			continue
		}
		snap, err := b.Snapshot(ctx)
		if err != nil {
			return fmt.Errorf("saving the current proxy settings: %w", err)
		}
		j.Saved = append(j.Saved, SavedSettings{Backend: b.Name(), Settings: snap})
	}
	j.OwnerPID, j.Addr, j.Created, j.State = p.owner(), addr, time.Now().UTC(), StateApplying
	if err := writeJournal(p.DataDir, j); err != nil {
		return fmt.Errorf("writing the proxy journal: %w", err)
	}
	for _, b := range p.Backends {
		if err := p.check(b.Apply(ctx, addr)); err != nil {
			if rerr := p.Disable(ctx); rerr != nil {
				return fmt.Errorf("setting the system proxy: %w (and restoring failed: %v; 'inspector proxy off' tries again)", err, rerr)
			}
			return fmt.Errorf("setting the system proxy: %w", err)
		}
	}
	j.State = StateSet
	if err := writeJournal(p.DataDir, j); err != nil {
		return fmt.Errorf("writing the proxy journal: %w", err)
	}
	return nil
}

// Disable implements SystemProxy. The journal is deleted only when every backend restored;
// otherwise it stays for the next attempt and the error says which backend failed.
func (p *Proxy) Disable(ctx context.Context) error {
	j, err := ReadJournal(p.DataDir)
	if errors.Is(err, ErrNoJournal) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for i := len(j.Saved) - 1; i >= 0; i-- {
		s := j.Saved[i]
		b := p.backend(s.Backend)
		if b == nil {
			errs = append(errs, fmt.Errorf("restoring %s proxy settings: that configuration is not available here", s.Backend))
			continue
		}
		if err := p.check(b.Restore(ctx, s.Settings)); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s proxy settings: %w", s.Backend, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return removeJournal(p.DataDir)
}

// Recover restores a leftover journal whose owner process is gone and reports whether it
// did. A journal whose owner still runs, or that has no owner (set by 'proxy on'), is left
// alone.
func (p *Proxy) Recover(ctx context.Context) (bool, error) {
	j, err := ReadJournal(p.DataDir)
	if errors.Is(err, ErrNoJournal) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if j.OwnerPID == 0 || ProcessAlive(j.OwnerPID) {
		return false, nil
	}
	if err := p.Disable(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// Status implements SystemProxy.
func (p *Proxy) Status(ctx context.Context) (ProxyStatus, error) {
	var st ProxyStatus
	j, err := ReadJournal(p.DataDir)
	switch {
	case err == nil:
		st.Addr, st.OwnerPID = j.Addr, j.OwnerPID
		st.OwnerAlive = j.OwnerPID != 0 && ProcessAlive(j.OwnerPID)
		// A journal without a state predates states and was written only around a
		// completed Enable.
		st.Set = j.State == StateSet || j.State == ""
		st.Incomplete = !st.Set
	case !errors.Is(err, ErrNoJournal):
		return st, err
	}
	var errs []error
	for _, b := range p.Backends {
		d, err := b.Describe(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st.Current = append(st.Current, d)
	}
	return st, errors.Join(errs...)
}
