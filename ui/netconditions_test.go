package ui

import (
	"strings"
	"testing"

	"inspector/engine/netprofile"
)

func TestNetworkConditionsDialogSetsTheShaper(t *testing.T) {
	sh, err := netprofile.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st, Network: sh})
	menuItem(t, editMenu(t, w, "Capture"), "Network conditions").Action()
	if w.Canvas().Overlays().Top() == nil {
		t.Fatal("no dialog")
	}
	n := u.networkDialog()
	if n.choice.Selected != netNone || !n.down.Disabled() {
		t.Fatalf("with no profile: choice %q, custom enabled %v", n.choice.Selected, !n.down.Disabled())
	}
	n.choice.SetSelected(n.choice.Options[2]) // 3G
	if err := n.apply(); err != nil {
		t.Fatal(err)
	}
	if p := sh.Profile(); p == nil || p.Name != "3G" || p.DownKbps != 1600 {
		t.Fatalf("shaper profile = %+v", p)
	}
	u.status.update()
	if !strings.Contains(u.status.Text(), "network: 3G") {
		t.Fatalf("status = %q", u.status.Text())
	}
	// Custom: bad numbers are an error and change nothing.
	n.choice.SetSelected(netCustom)
	if n.down.Disabled() {
		t.Fatal("custom fields disabled for Custom")
	}
	n.down.SetText("fast")
	if err := n.apply(); err == nil || !strings.Contains(err.Error(), `Download: "fast"`) {
		t.Fatalf("bad download: %v", err)
	}
	if sh.Profile().Name != "3G" {
		t.Fatal("a bad custom profile changed the shaper")
	}
	n.down.SetText("")
	n.up.SetText("")
	n.latency.SetText("")
	if err := n.apply(); err == nil {
		t.Fatal("an empty custom profile was applied")
	}
	n.hosts.SetText("[bad")
	n.latency.SetText("250")
	if err := n.apply(); err == nil || sh.Profile().Name != "3G" {
		t.Fatalf("bad host glob: %v, profile %+v", err, sh.Profile())
	}
	n.down.SetText("800")
	n.hosts.SetText("api.example.com, *.cdn.example")
	if err := n.apply(); err != nil {
		t.Fatal(err)
	}
	if p := sh.Profile(); p.DownKbps != 800 || p.LatencyMS != 250 || len(p.Hosts) != 2 || p.Hosts[1] != "*.cdn.example" {
		t.Fatalf("custom profile = %+v", p)
	}
	u.status.update()
	if !strings.Contains(u.status.Text(), "for api.example.com, *.cdn.example") {
		t.Fatalf("status = %q", u.status.Text())
	}
	// URL regular expressions, one per line; a bad one is refused and changes nothing.
	n.urls.SetText("/api/v2/\n(")
	if err := n.apply(); err == nil || !strings.Contains(err.Error(), "regular expression") || len(sh.Profile().URLs) != 0 {
		t.Fatalf("bad URL expression: %v, profile %+v", err, sh.Profile())
	}
	n.urls.SetText("/api/v2/\n\n  \\.js$ ")
	if err := n.apply(); err != nil {
		t.Fatal(err)
	}
	if p := sh.Profile(); len(p.URLs) != 2 || p.URLs[0] != "/api/v2/" || p.URLs[1] != `\.js$` || len(p.Hosts) != 2 {
		t.Fatalf("custom profile with URLs = %+v", p)
	}
	// Reopened, the dialog shows the custom profile; None turns shaping off.
	n = u.networkDialog()
	if n.choice.Selected != netCustom || n.latency.Text != "250" || n.urls.Text != "/api/v2/\n\\.js$" {
		t.Fatalf("reopened: %q latency %q urls %q", n.choice.Selected, n.latency.Text, n.urls.Text)
	}
	n.choice.SetSelected(netNone)
	if err := n.apply(); err != nil || sh.Profile() != nil {
		t.Fatalf("none: %v %+v", err, sh.Profile())
	}
	u.status.update()
	if strings.Contains(u.status.Text(), "network:") {
		t.Fatalf("status after none = %q", u.status.Text())
	}
}
