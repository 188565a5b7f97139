package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"inspector/platform/launch"
	"inspector/platform/osapi"
)

func init() {
	register("launch", "start a browser (chromium, chrome, edge, brave, firefox) or a terminal that goes through the running instance and trusts its CA, with a fresh profile and no change to the machine", runLaunch)
	register("env", "print the proxy and CA variables for the running instance: eval \"$(inspector env)\"", runEnv)
}

// launchedSuffix marks a launched client's process name: "chromium-2 (launched)". The
// filter client:NAME finds these sessions.
const launchedSuffix = " (launched)"

// launcher starts browsers for the running instance (`inspector launch`, the window's
// Intercept menu, POST /api/v1/launch). Each launch gets its own SOCKS5 listener, named for
// the client, so its sessions carry that name; the listener closes when the browser exits
// and the sessions stay.
type launcher struct {
	dataDir string
	inst    *instance

	mu      sync.Mutex
	running map[string]*exec.Cmd
}

// launchRequest is the body of POST /api/v1/launch.
type launchRequest struct {
	Name string   `json:"name"`
	Args []string `json:"args,omitempty"`
	URL  string   `json:"url,omitempty"`
}

// launchResult is its answer.
type launchResult struct {
	Client  string   `json:"client"`
	PID     int      `json:"pid"`
	Profile string   `json:"profile"`
	SOCKS   string   `json:"socks"`
	Command []string `json:"command"`
}

func (l *launcher) launch(req launchRequest) (launchResult, error) {
	br, ok := launch.ByID(req.Name)
	if !ok {
		return launchResult{}, usagef("unknown client %q: want %s or terminal", req.Name, launch.IDs())
	}
	exe, err := launch.Find(br, runtime.GOOS, os.Getenv, exec.LookPath)
	if err != nil {
		return launchResult{}, err
	}
	ca := l.inst.ca
	profile, n, err := launch.NewProfile(filepath.Join(l.dataDir, "launch"), br.ID)
	if err != nil {
		return launchResult{}, err
	}
	client := fmt.Sprintf("%s-%d", br.ID, n)
	socks, err := l.inst.engine.ListenSOCKS("127.0.0.1:0", client+launchedSuffix)
	if err != nil {
		return launchResult{}, err
	}
	if br.Kind == launch.KindFirefox {
		files, err := launch.MakeFiles(context.Background(), filepath.Join(l.dataDir, "launch", "env"), ca.PEM(), nil)
		if err == nil {
			err = launch.WriteFirefoxProfile(context.Background(), profile, socks.Addr(), files.CA, osapi.Nickname(ca.Cert()))
		}
		if err != nil {
			socks.Close()
			os.RemoveAll(profile)
			return launchResult{}, err
		}
	}
	argv := launch.Command(launch.Spec{Browser: br, Exe: exe, Profile: profile, SOCKS: socks.Addr(), SPKI: ca.SPKIHash(), Args: req.Args, URL: req.URL})
	cmd := exec.Command(argv[0], argv[1:]...)
	if os.Geteuid() == 0 && br.Kind == launch.KindChromium {
		// Chromium refuses to run as root with its sandbox.
		cmd.Args = append(cmd.Args[:1], append([]string{"--no-sandbox"}, cmd.Args[1:]...)...)
		argv = cmd.Args
	}
	if err := cmd.Start(); err != nil {
		socks.Close()
		return launchResult{}, fmt.Errorf("starting %s: %w", exe, err)
	}
	l.mu.Lock()
	l.running[client] = cmd
	l.mu.Unlock()
	go func() {
		_ = cmd.Wait() // a crash too: the listener goes, the sessions stay, tagged
		socks.Close()
		l.mu.Lock()
		delete(l.running, client)
		l.mu.Unlock()
	}()
	return launchResult{Client: client, PID: cmd.Process.Pid, Profile: profile, SOCKS: socks.Addr(), Command: argv}, nil
}

// stop ends the launched clients (instance shutdown): only those, never the user's own.
func (l *launcher) stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.running {
		_ = c.Process.Kill()
	}
	return nil
}

func launchHandlers(l *launcher) map[string]http.Handler {
	return map[string]http.Handler{
		"POST /api/v1/launch": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in launchRequest
			if !readJSON(w, r, &in, false) {
				return
			}
			res, err := l.launch(in)
			if err != nil {
				code := http.StatusUnprocessableEntity
				var ue usageError
				if errors.As(err, &ue) {
					code = http.StatusBadRequest
				}
				writeJSONError(w, code, err.Error())
				return
			}
			writeJSON(w, res)
		}),
	}
}

// envVars makes the env files of dataDir's CA and returns the variables for proxy.
func envVars(dataDir, proxy string) ([]launch.Var, error) {
	cert, err := existingCA(dataDir)
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, fmt.Errorf("no root CA in %s yet; start 'inspector' first", caDir(dataDir))
	}
	caPEM, err := os.ReadFile(filepath.Join(caDir(dataDir), "root.pem"))
	if err != nil {
		return nil, err
	}
	files, err := envFiles(dataDir, caPEM)
	if err != nil {
		return nil, err
	}
	return launch.Env(proxy, files), nil
}

// envFiles writes the CA, the bundle of the system's roots plus the CA, and the Java
// truststore under DATA_DIR/launch/env: the files the variables of `inspector env` and
// `inspector run` point at.
func envFiles(dataDir string, caPEM []byte) (launch.EnvFiles, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return launch.MakeFiles(ctx, filepath.Join(dataDir, "launch", "env"), caPEM, launch.SystemRootsPEM())
}

func runningProxy(dir string) (string, error) {
	ri, err := readRunningInstance(dir)
	if err != nil {
		return "", err
	}
	if ri == nil || ri.Proxy == "" {
		return "", usagef("no running instance in %s; start 'inspector' first", dir)
	}
	return ri.Proxy, nil
}

func defaultShell() string {
	if runtime.GOOS == "windows" {
		return "powershell"
	}
	return "sh"
}

func runEnv(args []string) error {
	fs := newFlagSet("env")
	dataDir := dataDirFlag(fs)
	shell := fs.String("shell", defaultShell(), "output for sh (bash, zsh), fish, cmd or powershell")
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	if _, err := launch.Format(*shell, nil); err != nil {
		return usagef("--shell: %v", err)
	}
	proxy, err := runningProxy(dir)
	if err != nil {
		return err
	}
	vs, err := envVars(dir, proxy)
	if err != nil {
		return err
	}
	out, _ := launch.Format(*shell, vs)
	_, err = fmt.Fprint(stdout, out)
	return err
}

// terminals are tried in order for `inspector launch terminal` on Linux.
var terminals = [][]string{{"x-terminal-emulator"}, {"gnome-terminal", "--"}, {"konsole", "-e"}, {"xfce4-terminal", "-x"}, {"xterm", "-e"}}

func runLaunch(args []string) error {
	fs := newFlagSet("launch")
	dataDir := dataDirFlag(fs)
	url := fs.String("url", "", "page to open")
	var extra []string
	for i, a := range args {
		if a == "--" {
			args, extra = args[:i], args[i+1:]
			break
		}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("launch needs one client: %s or terminal (extra browser arguments after --)", launch.IDs())
	}
	name := fs.Arg(0)
	dir, err := dataDir()
	if err != nil {
		return err
	}
	if strings.EqualFold(name, "terminal") {
		return launchTerminal(dir, extra)
	}
	if _, ok := launch.ByID(name); !ok {
		return usagef("unknown client %q: want %s or terminal", name, launch.IDs())
	}
	cc, err := newControlClient(dir)
	if err != nil {
		if errors.Is(err, errNoInstance) {
			return usagef("no running instance in %s; start 'inspector' first", dir)
		}
		return err
	}
	body, _ := json.Marshal(launchRequest{Name: name, Args: extra, URL: *url})
	var res launchResult
	if err := cc.do(http.MethodPost, "/api/v1/launch", strings.NewReader(string(body)), &res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "launched %s (process %d) with profile %s; its sessions: filter client:%s\n", res.Client, res.PID, res.Profile, res.Client)
	return nil
}

// launchTerminal opens a terminal window whose shell has the variables; where none is
// found it says how to set them in the current shell instead.
func launchTerminal(dir string, extra []string) error {
	proxy, err := runningProxy(dir)
	if err != nil {
		return err
	}
	msg, err := openTerminal(dir, proxy, extra)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

// findTerminal is the first terminal of terminals on PATH: its path and its arguments
// before a command. The error names what was looked for.
func findTerminal() (string, []string, error) {
	var looked []string
	for _, t := range terminals {
		looked = append(looked, t[0])
		if p, err := exec.LookPath(t[0]); err == nil {
			return p, t, nil
		}
	}
	return "", nil, fmt.Errorf("no terminal found (looked for %s); in the current shell run: eval \"$(inspector env)\"", strings.Join(looked, ", "))
}

// openTerminal opens a terminal whose shell goes through proxy and trusts dir's CA, and
// says in one line what it opened.
func openTerminal(dir, proxy string, extra []string) (string, error) {
	p, t, err := findTerminal()
	if err != nil {
		return "", err
	}
	vs, err := envVars(dir, proxy)
	if err != nil {
		return "", err
	}
	env := os.Environ()
	for _, v := range vs {
		env = append(env, v.Name+"="+v.Value)
	}
	cmd := exec.Command(p, t[1:]...)
	if len(extra) > 0 {
		cmd.Args = append(cmd.Args, extra...)
	} else if len(t) == 1 {
		cmd.Args = cmd.Args[:1]
	} else {
		cmd.Args = append(cmd.Args, os.Getenv("SHELL"))
	}
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go cmd.Wait()
	return fmt.Sprintf("opened %s (process %d) going through %s", t[0], cmd.Process.Pid, proxy), nil
}
