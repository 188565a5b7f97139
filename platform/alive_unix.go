//go:build unix

package platform

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// ProcessAlive reports whether process pid exists (and, on Linux, is not a zombie).
// pid <= 0 is never alive. A recycled pid is reported alive; the journal then waits for
// that process or for 'inspector proxy off'.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A killed process stays a zombie until its parent reaps it; it is dead for us.
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return false
		}
	}
	return true
}

func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
