package filter

import (
	"sync/atomic"

	"inspector/engine/session"
)

// ContractCheck tells whether a session is covered by the loaded API contract (checked)
// and, if so, whether it conforms. It must be safe for concurrent use.
type ContractCheck func(s *session.Session) (checked, conforms bool)

var contractCheck atomic.Pointer[ContractCheck]

// SetContract installs the check that contract: terms use (nil removes it). Without one,
// contract: terms match nothing. The composition root installs it when the user loads a
// contract (--contract, or the window's API contract tool); expressions compiled before
// see the new one at once.
func SetContract(c ContractCheck) {
	if c == nil {
		contractCheck.Store(nil)
		return
	}
	contractCheck.Store(&c)
}

func checkContract(s *session.Session) (checked, conforms bool) {
	c := contractCheck.Load()
	if c == nil || s == nil {
		return false, false
	}
	return (*c)(s)
}
