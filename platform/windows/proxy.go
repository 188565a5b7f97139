// Package windows implements certificate trust and system proxy settings for Windows: the
// current user's (and, when elevated, the machine's) Root certificate store through
// crypt32, Firefox's enterprise-roots preference, and the WinINet per-user proxy settings in
// the registry with an InternetSetOption refresh.
//
// The logic lives in files without build constraints and reaches the OS only through the
// RegistryKey and CertStore interfaces, so its exact registry values and store calls are
// unit-tested with fakes on any OS. The syscall layer is in the *_windows.go files.
package windows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"inspector/platform/osapi"
)

// RegistryKey is the open key HKCU\Software\Microsoft\Windows\CurrentVersion\Internet
// Settings. Get* report ok=false for a value that does not exist.
type RegistryKey interface {
	GetDWORD(name string) (v uint32, ok bool, err error)
	GetString(name string) (v string, ok bool, err error)
	SetDWORD(name string, v uint32) error
	SetString(name string, v string) error
	// Delete removes a value; deleting a missing value is not an error.
	Delete(name string) error
}

// InternetSettingsPath is the key WinINet reads per user, under HKEY_CURRENT_USER.
const InternetSettingsPath = `Software\Microsoft\Windows\CurrentVersion\Internet Settings`

// WinINet is the proxy backend for the per-user WinINet settings used by Edge, Chrome,
// .NET and most Windows apps.
type WinINet struct {
	Key RegistryKey
	// Refresh tells running apps the settings changed (InternetSetOption
	// INTERNET_OPTION_SETTINGS_CHANGED and INTERNET_OPTION_REFRESH); nil skips it. The
	// registry is the truth and the notification a courtesy: its failure (Wine returns
	// 12018, ERROR_INTERNET_INCORRECT_HANDLE_TYPE) is an *osapi.Warning, never a failure.
	Refresh func() error
}

// regValue is one registry value in the journal.
type regValue struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // "dword" or "sz"
	Exists bool   `json:"exists"`
	DWORD  uint32 `json:"dword,omitempty"`
	String string `json:"string,omitempty"`
}

// wininetValues are every value Apply may change, with their registry types.
var wininetValues = []struct{ name, kind string }{
	{"ProxyEnable", "dword"},
	{"ProxyServer", "sz"},
	{"ProxyOverride", "sz"},
	{"AutoConfigURL", "sz"},
	{"AutoDetect", "dword"},
}

// Name implements osapi.ProxyBackend.
func (w *WinINet) Name() string { return "wininet" }

func (w *WinINet) read() ([]regValue, error) {
	var out []regValue
	for _, v := range wininetValues {
		rv := regValue{Name: v.name, Kind: v.kind}
		var err error
		if v.kind == "dword" {
			rv.DWORD, rv.Exists, err = w.Key.GetDWORD(v.name)
		} else {
			rv.String, rv.Exists, err = w.Key.GetString(v.name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", v.name, err)
		}
		out = append(out, rv)
	}
	return out, nil
}

func (w *WinINet) refresh() error {
	if w.Refresh == nil {
		return nil
	}
	if err := w.Refresh(); err != nil {
		return osapi.Warn(fmt.Errorf("the proxy settings are saved in the registry, but telling running apps failed (they pick them up when restarted): %w", err))
	}
	return nil
}

// Snapshot implements osapi.ProxyBackend.
func (w *WinINet) Snapshot(context.Context) (json.RawMessage, error) {
	v, err := w.read()
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// ProxyServerValue is the ProxyServer value Apply writes for addr.
func ProxyServerValue(addr string) string { return "http=" + addr + ";https=" + addr }

// ProxyOverrideValue is the ProxyOverride (bypass list) Apply writes.
func ProxyOverrideValue() string { return strings.Join(osapi.Bypass, ";") + ";<local>" }

// Apply implements osapi.ProxyBackend: ProxyEnable=1, ProxyServer for http and https,
// the bypass list, and no auto-configuration script or auto-detection.
func (w *WinINet) Apply(_ context.Context, addr string) error {
	if err := w.Key.SetString("ProxyServer", ProxyServerValue(addr)); err != nil {
		return err
	}
	if err := w.Key.SetString("ProxyOverride", ProxyOverrideValue()); err != nil {
		return err
	}
	if err := w.Key.Delete("AutoConfigURL"); err != nil {
		return err
	}
	if err := w.Key.SetDWORD("AutoDetect", 0); err != nil {
		return err
	}
	if err := w.Key.SetDWORD("ProxyEnable", 1); err != nil {
		return err
	}
	return w.refresh()
}

// Restore implements osapi.ProxyBackend: every value back, values that did not exist deleted.
func (w *WinINet) Restore(_ context.Context, saved json.RawMessage) error {
	var vals []regValue
	if err := json.Unmarshal(saved, &vals); err != nil {
		return fmt.Errorf("wininet proxy journal: %w", err)
	}
	for _, v := range vals {
		var err error
		switch {
		case !v.Exists:
			err = w.Key.Delete(v.Name)
		case v.Kind == "dword":
			err = w.Key.SetDWORD(v.Name, v.DWORD)
		case v.Kind == "sz":
			err = w.Key.SetString(v.Name, v.String)
		default:
			err = fmt.Errorf("unknown registry value kind %q", v.Kind)
		}
		if err != nil {
			return fmt.Errorf("restoring %s: %w", v.Name, err)
		}
	}
	return w.refresh()
}

// Describe implements osapi.ProxyBackend.
func (w *WinINet) Describe(context.Context) (string, error) {
	vals, err := w.read()
	if err != nil {
		return "", err
	}
	m := map[string]regValue{}
	for _, v := range vals {
		m[v.Name] = v
	}
	var parts []string
	if m["ProxyEnable"].DWORD == 1 {
		parts = append(parts, "proxy "+m["ProxyServer"].String, "bypass "+m["ProxyOverride"].String)
	} else {
		parts = append(parts, "no manual proxy")
	}
	if u := m["AutoConfigURL"]; u.Exists && u.String != "" {
		parts = append(parts, "auto-config "+u.String)
	}
	return "Windows (WinINet): " + strings.Join(parts, ", "), nil
}
