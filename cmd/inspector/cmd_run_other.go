//go:build !linux

package main

import "runtime"

func init() {
	register("run", "run a command with its TCP captured without proxy settings (Linux only)", runRun)
}

// runRun says what `inspector run` would need here (docs/capture-without-proxy.md).
func runRun([]string) error {
	if runtime.GOOS == "windows" {
		return usagef("run: on Windows this needs a packet redirector such as WinDivert, which Inspector does not ship; use `inspector launch terminal` (a terminal whose programs use the proxy settings)")
	}
	return usagef("run: on macOS this needs a Network Extension (a transparent proxy provider), which Inspector does not ship; use `inspector launch terminal` (a terminal whose programs use the proxy settings)")
}

// runSupport says what running a command in a namespace of its own would need here.
func runSupport() error { return runRun(nil) }

func (l *launcher) run(string) (string, error) { return "", runSupport() }
