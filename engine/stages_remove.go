package engine

import "reflect"

// RemoveHook unregisters h from every stage it was added to with AddHook (h is compared
// as a value: pass the same pointer that was added). Exchanges already past a stage are
// not affected; later ones no longer call h, and a body stage with no hook left streams
// its bodies again instead of buffering them.
func (e *Engine) RemoveHook(h any) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return // a func adapter cannot be told apart from another: never added by value
	}
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	n := *e.hooks.Load()
	n.reqHead = without(n.reqHead, h)
	n.reqBody = without(n.reqBody, h)
	n.respHead = without(n.respHead, h)
	n.respBody = without(n.respBody, h)
	n.errs = without(n.errs, h)
	n.done = without(n.done, h)
	e.hooks.Store(&n)
}

// without returns s (re-made) less the hooks equal to h.
func without[T any](s []T, h any) []T {
	var out []T
	for _, x := range s {
		if any(x) != h {
			out = append(out, x)
		}
	}
	return out
}
