package osapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// Runner runs an OS command and returns its standard output. A command that exits non-zero
// returns its output so far and an error that includes its standard error text.
// Implementations must be safe for concurrent use.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ExecRunner runs commands with os/exec, inheriting the process environment.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", name, ErrToolMissing)
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.Bytes(), &ExitError{Cmd: name + " " + strings.Join(args, " "), Err: err, Stderr: msg}
	}
	return out.Bytes(), nil
}

// ExitError is a command that ran and failed.
type ExitError struct {
	Cmd    string
	Err    error
	Stderr string
}

func (e *ExitError) Error() string {
	if e.Stderr != "" {
		return fmt.Sprintf("%s: %v: %s", e.Cmd, e.Err, e.Stderr)
	}
	return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
}

func (e *ExitError) Unwrap() error { return e.Err }

// Call is one command recorded by a RecordingRunner.
type Call struct {
	Name string
	Args []string
}

// String is the command line, arguments joined with spaces.
func (c Call) String() string { return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " ")) }

// RecordingRunner is a fake Runner for tests: it records every call and answers with
// Respond (nil Respond answers empty output and no error). Safe for concurrent use.
type RecordingRunner struct {
	// Respond returns the output for a command line (Call.String()).
	Respond func(call Call) ([]byte, error)

	mu    sync.Mutex
	calls []Call
}

// Run implements Runner.
func (r *RecordingRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	c := Call{Name: name, Args: append([]string(nil), args...)}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	if r.Respond == nil {
		return nil, nil
	}
	return r.Respond(c)
}

// Calls returns the command lines run so far, in order.
func (r *RecordingRunner) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.calls))
	for i, c := range r.calls {
		out[i] = c.String()
	}
	return out
}

// Reset forgets the recorded calls.
func (r *RecordingRunner) Reset() {
	r.mu.Lock()
	r.calls = nil
	r.mu.Unlock()
}
