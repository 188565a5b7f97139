package platform

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"
)

// RunWatchdog is the body of the watchdog process. It returns when the journal in
// p.DataDir is gone (a clean Disable), when the journal belongs to another process than
// pid (a newer Enable took over), or after restoring the journal because pid died. It
// checks every interval (a second is plenty: the cost of a dead proxy is measured in
// seconds of no internet) and returns ctx.Err() when ctx ends.
func RunWatchdog(ctx context.Context, p *Proxy, pid int, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		j, err := ReadJournal(p.DataDir)
		if errors.Is(err, ErrNoJournal) {
			return nil
		}
		if err == nil && j.OwnerPID != pid {
			return nil
		}
		if err == nil && !ProcessAlive(pid) {
			return p.Disable(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// StartWatchdog starts exe with args as a detached watchdog process (its own process group
// or console, so a signal to the owner's group does not take it down too) and returns
// without waiting for it; the process is reaped in the background. out receives its
// standard output and error (nil discards them); pass a file, not a pipe you wait on, as
// the watchdog outlives its owner.
func StartWatchdog(exe string, args []string, out *os.File) (*os.Process, error) {
	cmd := exec.Command(exe, args...)
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	cmd.SysProcAttr = detachAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go cmd.Wait() //nolint:errcheck // only reaps the child
	return cmd.Process, nil
}
