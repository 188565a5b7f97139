package linux

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"inspector/platform/osapi"
)

// GNOME is the proxy backend for GNOME and other desktops that read org.gnome.system.proxy
// (GIO's proxy resolver, so most GTK apps and Chromium). It goes through the gsettings
// tool, so whatever GSettings backend the session uses (dconf, or keyfile with
// GSETTINGS_BACKEND=keyfile) is honoured.
type GNOME struct {
	Runner osapi.Runner
}

const gnomeSchema = "org.gnome.system.proxy"

// gnomeSchemas are every schema whose keys the snapshot records.
var gnomeSchemas = []string{gnomeSchema, gnomeSchema + ".http", gnomeSchema + ".https", gnomeSchema + ".ftp", gnomeSchema + ".socks"}

// Available reports whether gsettings and the org.gnome.system.proxy schema are installed.
func (g *GNOME) Available(ctx context.Context) bool {
	_, err := g.Runner.Run(ctx, "gsettings", "list-keys", gnomeSchema)
	return err == nil
}

// Name implements osapi.ProxyBackend.
func (g *GNOME) Name() string { return "gnome" }

// gnomeEntry is one key's value in GVariant text format, as gsettings prints it.
type gnomeEntry struct {
	Schema string `json:"schema"`
	Key    string `json:"key"`
	Value  string `json:"value"`
}

func (e gnomeEntry) id() string { return e.Schema + " " + e.Key }

// list returns every key of the proxy schemas; env, when set, prefixes the command with
// /usr/bin/env assignments (used to read schema defaults with GSETTINGS_BACKEND=memory).
func (g *GNOME) list(ctx context.Context, env ...string) ([]gnomeEntry, error) {
	// list-recursively of the parent schema prints its children (http, https, ftp, socks) too.
	name, args := "gsettings", []string{"list-recursively", gnomeSchema}
	if len(env) > 0 {
		name, args = "env", append(append(append([]string(nil), env...), "gsettings"), args...)
	}
	b, err := g.Runner.Run(ctx, name, args...)
	if err != nil {
		return nil, fmt.Errorf("gnome proxy settings: %w", err)
	}
	known := map[string]bool{}
	for _, s := range gnomeSchemas {
		known[s] = true
	}
	var out []gnomeEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) == 3 && known[f[0]] {
			out = append(out, gnomeEntry{f[0], f[1], f[2]})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gnome proxy settings: gsettings printed no keys for %s", gnomeSchema)
	}
	return out, nil
}

// Snapshot implements osapi.ProxyBackend: the value of every key of the five proxy schemas.
func (g *GNOME) Snapshot(ctx context.Context) (json.RawMessage, error) {
	entries, err := g.list(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(entries)
}

// gvString quotes s as a GVariant string literal.
func gvString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

func gvStrings(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = gvString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Apply implements osapi.ProxyBackend: manual mode, http and https at addr.
func (g *GNOME) Apply(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy address %q: %w", addr, err)
	}
	sets := [][3]string{
		{gnomeSchema + ".http", "host", gvString(host)},
		{gnomeSchema + ".http", "port", port},
		{gnomeSchema + ".https", "host", gvString(host)},
		{gnomeSchema + ".https", "port", port},
		{gnomeSchema, "ignore-hosts", gvStrings(append(osapi.Bypass, "127.0.0.0/8"))},
		{gnomeSchema, "mode", "'manual'"},
	}
	for _, s := range sets {
		if _, err := g.Runner.Run(ctx, "gsettings", "set", s[0], s[1], s[2]); err != nil {
			return fmt.Errorf("gnome proxy settings: %w", err)
		}
	}
	return nil
}

// Restore implements osapi.ProxyBackend. Keys already at their saved value are not written;
// a key whose saved value is the schema default is reset rather than set, so a key that was
// never set by the user is unset again.
func (g *GNOME) Restore(ctx context.Context, saved json.RawMessage) error {
	var want []gnomeEntry
	if err := json.Unmarshal(saved, &want); err != nil {
		return fmt.Errorf("gnome proxy journal: %w", err)
	}
	var defaults map[string]string
	for pass := 0; pass < 2; pass++ {
		cur, err := g.list(ctx)
		if err != nil {
			return err
		}
		have := map[string]string{}
		for _, e := range cur {
			have[e.id()] = e.Value
		}
		var diff []gnomeEntry
		for _, e := range want {
			if v, ok := have[e.id()]; ok && v != e.Value {
				diff = append(diff, e)
			}
		}
		if len(diff) == 0 {
			return nil
		}
		if pass == 1 {
			return fmt.Errorf("gnome proxy settings: %s is still %s after restoring %s", diff[0].id(), have[diff[0].id()], diff[0].Value)
		}
		if defaults == nil {
			defaults = map[string]string{}
			if def, err := g.list(ctx, "GSETTINGS_BACKEND=memory"); err == nil {
				for _, e := range def {
					defaults[e.id()] = e.Value
				}
			}
		}
		for _, e := range diff {
			args := []string{"set", e.Schema, e.Key, e.Value}
			if d, ok := defaults[e.id()]; ok && d == e.Value {
				args = []string{"reset", e.Schema, e.Key}
			}
			if _, err := g.Runner.Run(ctx, "gsettings", args...); err != nil {
				return fmt.Errorf("gnome proxy settings: %w", err)
			}
		}
	}
	return nil
}

// Describe implements osapi.ProxyBackend.
func (g *GNOME) Describe(ctx context.Context) (string, error) {
	cur, err := g.list(ctx)
	if err != nil {
		return "", err
	}
	v := map[string]string{}
	for _, e := range cur {
		v[e.id()] = strings.Trim(e.Value, "'")
	}
	mode := v[gnomeSchema+" mode"]
	switch mode {
	case "manual":
		return fmt.Sprintf("GNOME: manual, http %s:%s, https %s:%s, bypass %s", v[gnomeSchema+".http host"], v[gnomeSchema+".http port"],
			v[gnomeSchema+".https host"], v[gnomeSchema+".https port"], v[gnomeSchema+" ignore-hosts"]), nil
	case "auto":
		return "GNOME: automatic, " + v[gnomeSchema+" autoconfig-url"], nil
	default:
		return "GNOME: " + mode, nil
	}
}
