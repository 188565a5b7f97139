package darwin

import (
	"context"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"inspector/platform/internal/testca"
	"inspector/platform/osapi"
)

func TestKeychainCommands(t *testing.T) {
	cert := testca.New(t)
	installed := false
	r := &osapi.RecordingRunner{Respond: func(c osapi.Call) ([]byte, error) {
		switch c.Args[0] {
		case "find-certificate":
			if installed {
				return []byte("SHA-1 hash: " + strings.ToUpper(hex.EncodeToString(osapi.SHA1(cert))) + "\n"), nil
			}
			return nil, &osapi.ExitError{Cmd: "security", Stderr: "could not be found"}
		case "add-trusted-cert":
			installed = true
		case "delete-certificate":
			installed = false
		}
		return nil, nil
	}}
	k := NewTrustStore(r, "/Users/u")
	k.TempDir = t.TempDir()
	ctx := context.Background()
	var transcript []string
	if err := k.Install(ctx, cert); err != nil {
		t.Fatal(err)
	}
	calls := r.Calls()
	transcript = append(append(transcript, "# Install"), calls...)
	kc := "/Users/u/Library/Keychains/login.keychain-db"
	if len(calls) != 2 || calls[0] != "security find-certificate -a -Z -c "+cert.Subject.CommonName+" "+kc ||
		!strings.HasPrefix(calls[1], "security add-trusted-cert -r trustRoot -k "+kc+" "+k.TempDir) {
		t.Fatalf("install calls %q", calls)
	}
	r.Reset()
	if err := k.Install(ctx, cert); err != nil || len(r.Calls()) != 1 {
		t.Fatalf("second install ran %q (%v)", r.Calls(), err)
	}
	transcript = append(append(transcript, "# Install again"), r.Calls()...)
	r.Reset()
	st, _ := k.Status(ctx, cert)
	if !st.Trusted() {
		t.Fatalf("status %v", st)
	}
	transcript = append(append(transcript, "# Status"), r.Calls()...)
	r.Reset()
	if err := k.Remove(ctx, cert); err != nil {
		t.Fatal(err)
	}
	thumb := strings.ToUpper(hex.EncodeToString(osapi.SHA1(cert)))
	calls = r.Calls()
	transcript = append(append(transcript, "# Remove"), calls...)
	golden(t, "keychain.golden", transcript, map[string]string{
		k.TempDir: "$TMP", cert.Subject.CommonName: "$CN", thumb: "$SHA1"})
	if !strings.HasPrefix(calls[1], "security remove-trusted-cert ") || calls[2] != "security delete-certificate -Z "+thumb+" "+kc {
		t.Fatalf("remove calls %q", calls)
	}
}

func TestNetworkSetupRoundTrip(t *testing.T) {
	// A tiny fake of networksetup's state for two enabled services and a disabled one.
	type svc struct {
		webOn, secOn       bool
		web, webPort       string
		sec, secPort       string
		bypass             []string
		autoURL            string
		autoOn, discoverOn bool
	}
	state := map[string]*svc{
		"Wi-Fi":    {web: "corp", webPort: "3128", webOn: true, bypass: []string{"*.local", "169.254/16"}, autoURL: "http://wpad/p.pac"},
		"Ethernet": {discoverOn: true},
	}
	yes := func(b bool) string {
		if b {
			return "Yes"
		}
		return "No"
	}
	r := &osapi.RecordingRunner{Respond: func(c osapi.Call) ([]byte, error) {
		a := c.Args
		if a[0] == "-listallnetworkservices" {
			return []byte("An asterisk (*) denotes that a network service is disabled.\nWi-Fi\nEthernet\n*Bluetooth PAN\n"), nil
		}
		s := state[a[1]]
		switch a[0] {
		case "-getwebproxy":
			return []byte("Enabled: " + yes(s.webOn) + "\nServer: " + s.web + "\nPort: " + s.webPort + "\nAuthenticated Proxy Enabled: 0\n"), nil
		case "-getsecurewebproxy":
			return []byte("Enabled: " + yes(s.secOn) + "\nServer: " + s.sec + "\nPort: " + s.secPort + "\nAuthenticated Proxy Enabled: 0\n"), nil
		case "-getproxybypassdomains":
			if len(s.bypass) == 0 {
				return []byte("There aren't any bypass domains set on " + a[1] + ".\n"), nil
			}
			return []byte(strings.Join(s.bypass, "\n") + "\n"), nil
		case "-getautoproxyurl":
			u := s.autoURL
			if u == "" {
				u = "(null)"
			}
			return []byte("URL: " + u + "\nEnabled: " + yes(s.autoOn) + "\n"), nil
		case "-getproxyautodiscovery":
			return []byte("Auto Proxy Discovery: " + map[bool]string{true: "On", false: "Off"}[s.discoverOn] + "\n"), nil
		case "-setwebproxy":
			s.web, s.webPort, s.webOn = a[2], a[3], true
		case "-setsecurewebproxy":
			s.sec, s.secPort, s.secOn = a[2], a[3], true
		case "-setwebproxystate":
			s.webOn = a[2] == "on"
		case "-setsecurewebproxystate":
			s.secOn = a[2] == "on"
		case "-setproxybypassdomains":
			s.bypass = a[2:]
			if len(s.bypass) == 1 && s.bypass[0] == "Empty" {
				s.bypass = nil
			}
		case "-setautoproxyurl":
			s.autoURL, s.autoOn = a[2], true
		case "-setautoproxystate":
			s.autoOn = a[2] == "on"
		case "-setproxyautodiscovery":
			s.discoverOn = a[2] == "on"
		default:
			t.Fatalf("unexpected %v", c)
		}
		return nil, nil
	}}
	n := &NetworkSetup{Runner: r}
	ctx := context.Background()
	snap, err := n.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	transcript := append([]string{"# Snapshot"}, r.Calls()...)
	r.Reset()
	if err := n.Apply(ctx, "127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	transcript = append(append(transcript, "# Apply 127.0.0.1:8080"), r.Calls()...)
	want := []string{
		"networksetup -listallnetworkservices",
		"networksetup -setwebproxy Wi-Fi 127.0.0.1 8080",
		"networksetup -setsecurewebproxy Wi-Fi 127.0.0.1 8080",
		"networksetup -setproxybypassdomains Wi-Fi localhost 127.0.0.1 ::1",
		"networksetup -setautoproxystate Wi-Fi off",
		"networksetup -setproxyautodiscovery Wi-Fi off",
		"networksetup -setwebproxy Ethernet 127.0.0.1 8080",
		"networksetup -setsecurewebproxy Ethernet 127.0.0.1 8080",
		"networksetup -setproxybypassdomains Ethernet localhost 127.0.0.1 ::1",
		"networksetup -setautoproxystate Ethernet off",
		"networksetup -setproxyautodiscovery Ethernet off",
	}
	if got := r.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("apply calls\n%q\nwant\n%q", got, want)
	}
	r.Reset()
	if err := n.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	transcript = append(append(transcript, "# Restore"), r.Calls()...)
	golden(t, "networksetup.golden", transcript, nil)
	again, _ := n.Snapshot(ctx)
	if string(again) != string(snap) {
		// Ethernet's never-set web proxy keeps our host while disabled; compare what matters.
		t.Logf("snapshot after restore: %s", again)
	}
	w, e := state["Wi-Fi"], state["Ethernet"]
	if !w.webOn || w.web != "corp" || w.webPort != "3128" || w.secOn || !reflect.DeepEqual(w.bypass, []string{"*.local", "169.254/16"}) || w.autoOn || w.autoURL != "http://wpad/p.pac" {
		t.Fatalf("Wi-Fi after restore %+v", *w)
	}
	if e.webOn || e.secOn || e.bypass != nil || !e.discoverOn {
		t.Fatalf("Ethernet after restore %+v", *e)
	}
}
