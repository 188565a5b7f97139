//go:build !unix && !windows

package platform

import (
	"os"
	"syscall"
)

// ProcessAlive reports whether process pid can be found; on this system that is the best
// available answer.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.FindProcess(pid)
	return err == nil
}

func detachAttr() *syscall.SysProcAttr { return nil }
