package engine

import "time"

// SetProcessWait sets how long the observers' deliverer waits for a process lookup and
// returns a func restoring the old value (tests only).
func SetProcessWait(d time.Duration) (restore func()) {
	old := processWait
	processWait = d
	return func() { processWait = old }
}
