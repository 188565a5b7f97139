package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"inspector/rootca"
	"inspector/store"
)

// TestWindowRetentionSavesAndApplies: Settings' Apply (ui.Deps.Retention of a real
// instance) writes retention.json, which the next start reads, and sets the limits of
// the running store. (A failing save that applies nothing is TestSettingsRetentionPreviewAndApply in ui.)
func TestWindowRetentionSavesAndApplies(t *testing.T) {
	dir := t.TempDir()
	inst, err := startInstance(dir, instanceFlags{listen: "127.0.0.1:0", captureLimit: 1 << 20, upstreamProto: "auto", leafDays: rootca.MaxLeafDays})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.shutdown()
	d := windowDeps(inst, nil)
	if d.Retention == nil {
		t.Fatal("no retention in the window deps")
	}
	want := store.Limits{MaxSessions: 500, MaxBytes: 64 << 20, MaxAge: 30 * 24 * time.Hour}
	if _, err := d.Retention.Apply(want); err != nil {
		t.Fatal(err)
	}
	if got := inst.store.Limits(); got != want {
		t.Errorf("store limits %+v, want %+v", got, want)
	}
	got, err := loadRetention(dir)
	if err != nil || got != want {
		t.Fatalf("retention.json read back %+v, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, retentionFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("retention.json: %v %v", fi, err)
	}
}
