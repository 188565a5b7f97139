package darwin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"inspector/platform/osapi"
)

// NetworkSetup is the proxy backend for macOS: the web (HTTP) and secure web (HTTPS)
// proxies, bypass domains, auto-proxy URL and auto-discovery of every enabled network
// service, through networksetup.
//
// Limitation: networksetup cannot read a proxy password, so an original authenticated
// proxy is restored with its server and port but without its authentication flag.
type NetworkSetup struct {
	Runner osapi.Runner
}

// Name implements osapi.ProxyBackend.
func (n *NetworkSetup) Name() string { return "networksetup" }

func (n *NetworkSetup) run(ctx context.Context, args ...string) (string, error) {
	out, err := n.Runner.Run(ctx, "networksetup", args...)
	if err != nil {
		return "", fmt.Errorf("networksetup: %w", err)
	}
	return string(out), nil
}

// services lists the enabled network services (disabled ones are starred).
func (n *NetworkSetup) services(ctx context.Context) ([]string, error) {
	out, err := n.run(ctx, "-listallnetworkservices")
	if err != nil {
		return nil, err
	}
	var svcs []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		if l == "" || strings.HasPrefix(l, "*") || strings.HasPrefix(l, "An asterisk") {
			continue
		}
		svcs = append(svcs, l)
	}
	if len(svcs) == 0 {
		return nil, fmt.Errorf("networksetup: no enabled network service")
	}
	return svcs, nil
}

// proxySetting is a web or secure web proxy.
type proxySetting struct {
	Enabled bool   `json:"enabled"`
	Server  string `json:"server"`
	Port    string `json:"port"`
}

// serviceSettings is everything Apply changes on one service.
type serviceSettings struct {
	Service       string       `json:"service"`
	Web           proxySetting `json:"web"`
	SecureWeb     proxySetting `json:"secure_web"`
	Bypass        []string     `json:"bypass"`
	AutoURL       string       `json:"auto_url"`
	AutoEnabled   bool         `json:"auto_enabled"`
	AutoDiscovery bool         `json:"auto_discovery"`
}

// fields parses "Key: value" lines.
func fields(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func parseProxy(out string) proxySetting {
	f := fields(out)
	return proxySetting{Enabled: f["Enabled"] == "Yes", Server: f["Server"], Port: f["Port"]}
}

func (n *NetworkSetup) read(ctx context.Context, svc string) (serviceSettings, error) {
	s := serviceSettings{Service: svc}
	out, err := n.run(ctx, "-getwebproxy", svc)
	if err != nil {
		return s, err
	}
	s.Web = parseProxy(out)
	if out, err = n.run(ctx, "-getsecurewebproxy", svc); err != nil {
		return s, err
	}
	s.SecureWeb = parseProxy(out)
	if out, err = n.run(ctx, "-getproxybypassdomains", svc); err != nil {
		return s, err
	}
	if !strings.HasPrefix(out, "There aren't any") {
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				s.Bypass = append(s.Bypass, l)
			}
		}
	}
	if out, err = n.run(ctx, "-getautoproxyurl", svc); err != nil {
		return s, err
	}
	f := fields(out)
	if u := f["URL"]; u != "(null)" {
		s.AutoURL = u
	}
	s.AutoEnabled = f["Enabled"] == "Yes"
	if out, err = n.run(ctx, "-getproxyautodiscovery", svc); err != nil {
		return s, err
	}
	s.AutoDiscovery = fields(out)["Auto Proxy Discovery"] == "On"
	return s, nil
}

// Snapshot implements osapi.ProxyBackend.
func (n *NetworkSetup) Snapshot(ctx context.Context) (json.RawMessage, error) {
	svcs, err := n.services(ctx)
	if err != nil {
		return nil, err
	}
	var all []serviceSettings
	for _, svc := range svcs {
		s, err := n.read(ctx, svc)
		if err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	return json.Marshal(all)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Apply implements osapi.ProxyBackend.
func (n *NetworkSetup) Apply(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy address %q: %w", addr, err)
	}
	svcs, err := n.services(ctx)
	if err != nil {
		return err
	}
	for _, svc := range svcs {
		for _, args := range [][]string{
			{"-setwebproxy", svc, host, port},
			{"-setsecurewebproxy", svc, host, port},
			append([]string{"-setproxybypassdomains", svc}, osapi.Bypass...),
			{"-setautoproxystate", svc, "off"},
			{"-setproxyautodiscovery", svc, "off"},
		} {
			if _, err := n.run(ctx, args...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n *NetworkSetup) restoreProxy(ctx context.Context, kind, svc string, p proxySetting) error {
	if p.Server != "" {
		if _, err := n.run(ctx, "-set"+kind, svc, p.Server, p.Port); err != nil {
			return err
		}
	}
	_, err := n.run(ctx, "-set"+kind+"state", svc, onOff(p.Enabled))
	return err
}

// Restore implements osapi.ProxyBackend. A service that no longer exists is skipped.
func (n *NetworkSetup) Restore(ctx context.Context, saved json.RawMessage) error {
	var all []serviceSettings
	if err := json.Unmarshal(saved, &all); err != nil {
		return fmt.Errorf("networksetup proxy journal: %w", err)
	}
	present := map[string]bool{}
	if svcs, err := n.services(ctx); err == nil {
		for _, s := range svcs {
			present[s] = true
		}
	}
	for _, s := range all {
		if !present[s.Service] {
			continue
		}
		if err := n.restoreProxy(ctx, "webproxy", s.Service, s.Web); err != nil {
			return err
		}
		if err := n.restoreProxy(ctx, "securewebproxy", s.Service, s.SecureWeb); err != nil {
			return err
		}
		bypass := s.Bypass
		if len(bypass) == 0 {
			bypass = []string{"Empty"}
		}
		if _, err := n.run(ctx, append([]string{"-setproxybypassdomains", s.Service}, bypass...)...); err != nil {
			return err
		}
		if s.AutoURL != "" {
			if _, err := n.run(ctx, "-setautoproxyurl", s.Service, s.AutoURL); err != nil {
				return err
			}
		}
		if _, err := n.run(ctx, "-setautoproxystate", s.Service, onOff(s.AutoEnabled)); err != nil {
			return err
		}
		if _, err := n.run(ctx, "-setproxyautodiscovery", s.Service, onOff(s.AutoDiscovery)); err != nil {
			return err
		}
	}
	return nil
}

// Describe implements osapi.ProxyBackend.
func (n *NetworkSetup) Describe(ctx context.Context) (string, error) {
	svcs, err := n.services(ctx)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, svc := range svcs {
		s, err := n.read(ctx, svc)
		if err != nil {
			return "", err
		}
		d := "no proxy"
		switch {
		case s.Web.Enabled || s.SecureWeb.Enabled:
			d = fmt.Sprintf("http %s:%s (%s), https %s:%s (%s)", s.Web.Server, s.Web.Port, onOff(s.Web.Enabled), s.SecureWeb.Server, s.SecureWeb.Port, onOff(s.SecureWeb.Enabled))
		case s.AutoEnabled:
			d = "auto-config " + s.AutoURL
		}
		parts = append(parts, svc+": "+d)
	}
	return "macOS " + strings.Join(parts, "; "), nil
}
