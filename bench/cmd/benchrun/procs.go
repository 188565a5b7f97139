package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proxy is one kind of proxy under test. start launches a fresh process for one run.
type proxy struct {
	name    string
	reverse bool // a TLS reverse proxy: clients dial it directly, no CONNECT
	noH2    bool // known not to speak HTTP/2 to clients
	noBig   bool // skipped for the 1 GiB stream (buffers whole bodies)
	bigNote string
	start   func(ctx context.Context) (*proc, error)
}

// proc is a running proxy process.
type proc struct {
	cmd     *exec.Cmd
	pid     int
	addr    string         // host:port clients connect to
	roots   *x509.CertPool // what clients must trust to accept its certificates
	stderr  *tailBuffer
	lines   *lineCounter // stdout lines after the ready line (Inspector: one per session)
	done    chan error
	drained chan struct{} // closed when stdout reached EOF (at once without a ready line)
}

// stop ends the process with SIGTERM (SIGKILL after 10 s) and waits for it and for the
// end of its stdout, so lines counts every line it printed.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case werr := <-p.done:
		err = exitErr(werr)
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		err = errors.New("did not stop within 10 s of SIGTERM; killed")
	}
	<-p.drained
	return err
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}

// tailBuffer keeps the last 4 KiB written, for error messages.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

type lineCounter struct {
	mu sync.Mutex
	n  int64
}

func (l *lineCounter) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// launch starts cmd with stderr kept and waits for its ready signal: a "listening on ADDR"
// line on stdout when readyLine is true, else a successful dial to addr.
func launch(ctx context.Context, cmd *exec.Cmd, readyLine bool, addr string) (*proc, error) {
	p := &proc{cmd: cmd, stderr: &tailBuffer{}, lines: &lineCounter{}, done: make(chan error, 1), drained: make(chan struct{}), addr: addr}
	cmd.Stderr = p.stderr
	// An os.Pipe rather than StdoutPipe: Wait (run at once below) would close a StdoutPipe
	// when the process exits, possibly before its last lines were read.
	var stdout, stdoutW *os.File
	if readyLine {
		var err error
		if stdout, stdoutW, err = os.Pipe(); err != nil {
			return nil, err
		}
		cmd.Stdout = stdoutW
	}
	err := cmd.Start()
	if stdoutW != nil {
		stdoutW.Close() // the child holds its own copy; EOF comes when it exits
	}
	if err != nil {
		if stdout != nil {
			stdout.Close()
		}
		return nil, err
	}
	p.pid = cmd.Process.Pid
	ready := make(chan string, 1)
	if !readyLine {
		close(p.drained)
	} else {
		go func() {
			defer close(p.drained)
			defer stdout.Close()
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			sent := false
			for sc.Scan() {
				if !sent {
					if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
						ready <- strings.TrimSpace(a)
						sent = true
					}
					continue
				}
				p.lines.mu.Lock()
				p.lines.n++
				p.lines.mu.Unlock()
			}
			io.Copy(io.Discard, stdout)
		}()
	}
	go func() { p.done <- cmd.Wait() }()
	fail := func(err error) (*proc, error) {
		_ = cmd.Process.Kill()
		<-p.done
		if s := p.stderr.String(); s != "" {
			err = fmt.Errorf("%w: %s", err, lastLine(s))
		}
		return nil, err
	}
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	if readyLine {
		select {
		case p.addr = <-ready:
		case err := <-p.done:
			p.done <- err
			return fail(fmt.Errorf("exited before it was ready (%v)", err))
		case <-deadline.C:
			return fail(errors.New("not ready within 60 s"))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
		return p, nil
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p, nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fail(fmt.Errorf("exited before it was ready (%v)", err))
		case <-deadline.C:
			return fail(errors.New("not accepting connections within 60 s"))
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-tick.C:
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// freePort picks a free TCP port on 127.0.0.1 for programs that cannot listen on port 0
// and report it (mitmdump, nginx).
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func poolFromFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// env is what every proxy start needs.
type env struct {
	tmp       string
	pin       pinning
	caDir     string // MITM CA shared by Inspector, martian, goproxy: root.pem, root-key.pem
	caPool    *x509.CertPool
	originCA  string // PEM path
	originPEM []byte
	nginxCert string
	nginxKey  string
	originAdr string
	runs      int
}

func (e *env) nextDir(name string) (string, error) {
	e.runs++
	d := filepath.Join(e.tmp, fmt.Sprintf("run%03d-%s", e.runs, strings.ReplaceAll(name, " ", "_")))
	return d, os.MkdirAll(d, 0o700)
}

// inspector starts the real binary headless with its own data directory (holding the
// shared MITM CA), trusting the origin's CA; extra flags are appended.
func (e *env) inspector(bin string, capture bool, extra ...string) func(context.Context) (*proc, error) {
	return func(ctx context.Context) (*proc, error) {
		d, err := e.nextDir("inspector")
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(d, "ca"), 0o700); err != nil {
			return nil, err
		}
		for _, f := range []string{"root.pem", "root-key.pem"} {
			if err := copyFile(filepath.Join(d, "ca", f), filepath.Join(e.caDir, f)); err != nil {
				return nil, err
			}
		}
		argv := []string{bin, "--headless", "--listen", "127.0.0.1:0", "--data-dir", d, "--upstream-ca", e.originCA}
		if !capture {
			argv = append(argv, "--no-capture")
		}
		argv = append(argv, extra...)
		cmd := e.pin.proxyCommand(argv...)
		cmd.Env = append(os.Environ(), "LANG=C.UTF-8")
		p, err := launch(ctx, cmd, true, "")
		if err != nil {
			return nil, err
		}
		p.roots = e.caPool
		return p, nil
	}
}

func (e *env) goPeer(bin string, extra ...string) func(context.Context) (*proc, error) {
	return func(ctx context.Context) (*proc, error) {
		args := append([]string{"-listen", "127.0.0.1:0",
			"-ca-cert", filepath.Join(e.caDir, "root.pem"), "-ca-key", filepath.Join(e.caDir, "root-key.pem"),
			"-upstream-ca", e.originCA}, extra...)
		cmd := e.pin.proxyCommand(append([]string{bin}, args...)...)
		p, err := launch(ctx, cmd, true, "")
		if err != nil {
			return nil, err
		}
		p.roots = e.caPool
		return p, nil
	}
}

// mitmdump keeps its CA in confdir (created on its first start) and is told to trust the
// origin's CA; -q keeps it from printing every flow.
func (e *env) mitmdump(bin string) func(context.Context) (*proc, error) {
	confdir := filepath.Join(e.tmp, "mitmproxy-conf")
	return func(ctx context.Context) (*proc, error) {
		addr, err := freePort()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		cmd := e.pin.proxyCommand(bin, "-q", "--listen-host", "127.0.0.1", "--listen-port", port,
			"--set", "confdir="+confdir, "--set", "ssl_verify_upstream_trusted_ca="+e.originCA)
		p, err := launch(ctx, cmd, false, addr)
		if err != nil {
			return nil, err
		}
		if p.roots, err = poolFromFile(filepath.Join(confdir, "mitmproxy-ca-cert.pem")); err != nil {
			p.stop()
			return nil, err
		}
		return p, nil
	}
}

// nginxConf is a single-process nginx (master_process off, so its PID is the one that
// works) terminating TLS with h2 and h1 and proxying to the origin over kept-alive,
// verified TLS, streaming bodies both ways (no buffering to disk).
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid {{DIR}}/nginx.pid;
error_log stderr error;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path {{DIR}}/body;
    proxy_temp_path {{DIR}}/proxy;
    fastcgi_temp_path {{DIR}}/fastcgi;
    uwsgi_temp_path {{DIR}}/uwsgi;
    scgi_temp_path {{DIR}}/scgi;
    keepalive_requests 100000000;
    http2_max_requests 100000000;
    client_max_body_size 0;
    upstream origin {
        server {{ORIGIN}};
        keepalive 64;
    }
    server {
        listen {{ADDR}} ssl http2;
        ssl_certificate {{CERT}};
        ssl_certificate_key {{KEY}};
        ssl_session_cache builtin:10000;
        location / {
            proxy_pass https://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_ssl_verify on;
            proxy_ssl_name localhost;
            proxy_ssl_server_name on;
            proxy_ssl_trusted_certificate {{ORIGINCA}};
            proxy_ssl_session_reuse on;
        }
    }
}
`

func (e *env) nginx(bin string) func(context.Context) (*proc, error) {
	return func(ctx context.Context) (*proc, error) {
		d, err := e.nextDir("nginx")
		if err != nil {
			return nil, err
		}
		addr, err := freePort()
		if err != nil {
			return nil, err
		}
		conf := strings.NewReplacer("{{DIR}}", d, "{{ORIGIN}}", e.originAdr, "{{ADDR}}", addr,
			"{{CERT}}", e.nginxCert, "{{KEY}}", e.nginxKey, "{{ORIGINCA}}", e.originCA).Replace(nginxConf)
		cf := filepath.Join(d, "nginx.conf")
		if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		cmd := e.pin.proxyCommand(bin, "-p", d, "-c", cf, "-e", "stderr")
		p, err := launch(ctx, cmd, false, addr)
		if err != nil {
			return nil, err
		}
		p.roots = x509.NewCertPool()
		p.roots.AppendCertsFromPEM(e.originPEM)
		return p, nil
	}
}

// versionOf runs argv and returns the first non-empty line of its combined output.
func versionOf(argv ...string) string {
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	for _, l := range bytes.Split(out, []byte("\n")) {
		if s := strings.TrimSpace(string(l)); s != "" {
			return s
		}
	}
	return "unknown version"
}
