package linux

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"inspector/platform/osapi"
)

// KDE is the proxy backend for KDE Plasma: the [Proxy Settings] group of kioslaverc, written
// with kwriteconfig5/6 and announced to running apps with a KIO reparse signal over D-Bus.
type KDE struct {
	Runner osapi.Runner
	// Version is 5 or 6 (kwriteconfig5/kreadconfig5 or kwriteconfig6/kreadconfig6).
	Version int
}

const (
	kdeFile  = "kioslaverc"
	kdeGroup = "Proxy Settings"
	// kdeUnset is the default kreadconfig prints for a key that is not in the file.
	kdeUnset = "\x01inspector-unset\x01"
)

// kdeKeys are every key Apply changes or that decides how the others are read.
var kdeKeys = []string{"ProxyType", "httpProxy", "httpsProxy", "ftpProxy", "socksProxy", "NoProxyFor", "ReversedException", "Proxy Config Script"}

// Name implements osapi.ProxyBackend.
func (k *KDE) Name() string { return "kde" }

func (k *KDE) tool(kind string) string { return fmt.Sprintf("k%sconfig%d", kind, k.Version) }

// kdeValue is one key; Set false means the key was absent from the file.
type kdeValue struct {
	Key   string `json:"key"`
	Set   bool   `json:"set"`
	Value string `json:"value,omitempty"`
}

func (k *KDE) read(ctx context.Context) ([]kdeValue, error) {
	var out []kdeValue
	for _, key := range kdeKeys {
		b, err := k.Runner.Run(ctx, k.tool("read"), "--file", kdeFile, "--group", kdeGroup, "--key", key, "--default", kdeUnset)
		if err != nil {
			return nil, fmt.Errorf("kde proxy settings: %w", err)
		}
		v := strings.TrimSuffix(string(b), "\n")
		if v == kdeUnset {
			out = append(out, kdeValue{Key: key})
		} else {
			out = append(out, kdeValue{Key: key, Set: true, Value: v})
		}
	}
	return out, nil
}

func (k *KDE) write(ctx context.Context, key, value string) error {
	_, err := k.Runner.Run(ctx, k.tool("write"), "--file", kdeFile, "--group", kdeGroup, "--key", key, value)
	return err
}

func (k *KDE) notify(ctx context.Context) {
	// Running KIO apps re-read kioslaverc on this signal; without a session bus there is
	// nobody to tell, so a failure is not an error.
	_, _ = k.Runner.Run(ctx, "dbus-send", "--type=signal", "/KIO/Scheduler", "org.kde.KIO.Scheduler.reparseSlaveConfiguration", "string:")
}

// Snapshot implements osapi.ProxyBackend.
func (k *KDE) Snapshot(ctx context.Context) (json.RawMessage, error) {
	v, err := k.read(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Apply implements osapi.ProxyBackend: ProxyType 1 (manual) with http and https at addr.
func (k *KDE) Apply(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy address %q: %w", addr, err)
	}
	url := "http://" + host + " " + port
	for _, kv := range [][2]string{
		{"httpProxy", url}, {"httpsProxy", url},
		{"NoProxyFor", strings.Join(osapi.Bypass, ",")}, {"ReversedException", "false"},
		{"ProxyType", "1"},
	} {
		if err := k.write(ctx, kv[0], kv[1]); err != nil {
			return fmt.Errorf("kde proxy settings: %w", err)
		}
	}
	k.notify(ctx)
	return nil
}

// Restore implements osapi.ProxyBackend: keys that were absent are deleted again.
func (k *KDE) Restore(ctx context.Context, saved json.RawMessage) error {
	var want []kdeValue
	if err := json.Unmarshal(saved, &want); err != nil {
		return fmt.Errorf("kde proxy journal: %w", err)
	}
	for _, v := range want {
		var err error
		if v.Set {
			err = k.write(ctx, v.Key, v.Value)
		} else {
			_, err = k.Runner.Run(ctx, k.tool("write"), "--file", kdeFile, "--group", kdeGroup, "--key", v.Key, "--delete")
		}
		if err != nil {
			return fmt.Errorf("kde proxy settings: %w", err)
		}
	}
	k.notify(ctx)
	return nil
}

// Describe implements osapi.ProxyBackend.
func (k *KDE) Describe(ctx context.Context) (string, error) {
	vals, err := k.read(ctx)
	if err != nil {
		return "", err
	}
	m := map[string]string{}
	for _, v := range vals {
		m[v.Key] = v.Value
	}
	switch m["ProxyType"] {
	case "1":
		return fmt.Sprintf("KDE: manual, http %s, https %s, bypass %s", m["httpProxy"], m["httpsProxy"], m["NoProxyFor"]), nil
	case "2":
		return "KDE: automatic, " + m["Proxy Config Script"], nil
	case "3":
		return "KDE: auto-detect", nil
	case "4":
		return "KDE: from environment variables", nil
	default:
		return "KDE: no proxy", nil
	}
}
