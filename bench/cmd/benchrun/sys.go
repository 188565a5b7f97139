package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. Linux fixes it at
// 100 on every architecture Go supports; getconf confirms it where available.
var clockTicks = func() float64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}()

// cpuTime is utime+stime of process pid (all its threads, dead ones included).
func cpuTime(pid int) (time.Duration, error) {
	u, k, err := cpuTimes(pid)
	return u + k, err
}

// cpuTimes is utime and stime (user and kernel CPU) of process pid.
func cpuTimes(pid int) (user, kernel time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStat(b)
}

// parseStatCPU is utime+stime of a /proc/PID/stat line.
func parseStatCPU(b []byte) (time.Duration, error) {
	u, k, err := parseStat(b)
	return u + k, err
}

// parseStat reads utime and stime (fields 14 and 15) from a /proc/PID/stat line. The
// command name (field 2) may hold spaces and parentheses, so fields count from the last ')'.
func parseStat(b []byte) (user, kernel time.Duration, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc stat line without ')': %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc stat line with %d fields after the name", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc stat: bad utime/stime %q %q", f[11], f[12])
	}
	tick := func(n uint64) time.Duration { return time.Duration(float64(n) / clockTicks * float64(time.Second)) }
	return tick(ut), tick(st), nil
}

// memKiB reads a "Vm…:" line (VmRSS, VmHWM) of /proc/PID/status in KiB.
func memKiB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v := strings.Fields(rest)
			if len(v) == 0 {
				break
			}
			return strconv.ParseInt(v[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// pinning says how processes are placed: the harness (origin + load generator) on CPU 0 and
// the proxy under test on CPU 1, when there are two CPUs and taskset.
type pinning struct {
	on     bool
	reason string // why not, when off
}

// pinSelf re-executes the harness under `taskset -c 0` once. It returns only when pinning
// is done or not possible.
func pinSelf() pinning {
	if os.Getenv("INSPECTOR_BENCH_PINNED") == "1" {
		return pinning{on: true}
	}
	if os.Getenv("INSPECTOR_BENCH_PINNED") == "off" {
		return pinning{reason: "pinning is off: taskset missing or fewer than 2 CPUs"}
	}
	ts, err := exec.LookPath("taskset")
	if err != nil || runtime.NumCPU() < 2 {
		os.Setenv("INSPECTOR_BENCH_PINNED", "off")
		return pinning{reason: "pinning is off: taskset missing or fewer than 2 CPUs"}
	}
	self, err := os.Executable()
	if err != nil {
		return pinning{reason: "pinning is off: " + err.Error()}
	}
	os.Setenv("INSPECTOR_BENCH_PINNED", "1")
	args := append([]string{"taskset", "-c", "0", self}, os.Args[1:]...)
	err = syscall.Exec(ts, args, os.Environ())
	return pinning{reason: "pinning is off: exec taskset: " + err.Error()}
}

// proxyCommand wraps argv so the proxy runs on CPU 1 when pinning is on; taskset execs the
// program, so the started process's PID is the proxy's.
func (p pinning) proxyCommand(argv ...string) *exec.Cmd {
	if p.on {
		return exec.Command("taskset", append([]string{"-c", "1"}, argv...)...)
	}
	return exec.Command(argv[0], argv[1:]...)
}

// machine describes the host for the report.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kib)
		mem = fmt.Sprintf(", %d GiB", (kib+512<<10)>>20)
	}
	osName := runtime.GOOS
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				osName = strings.Trim(v, `"`)
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d CPUs%s, %s%s, %s", cpu, onlineCPUs(), mem, osName, kernel, runtime.Version())
}

func onlineCPUs() int {
	if out, err := exec.Command("nproc", "--all").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			return n
		}
	}
	return runtime.NumCPU()
}
