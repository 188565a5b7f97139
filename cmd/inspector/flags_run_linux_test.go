package main

import (
	"reflect"
	"testing"

	"inspector/store"
)

// TestRunFlagsShareTheMainDefaults: `inspector run` starts its instance with the main
// command's defaults for every engine setting (it built them by hand before and left
// --fingerprint and the retention limits at zero); only the listen address differs.
func TestRunFlagsShareTheMainDefaults(t *testing.T) {
	mfs, main, _, mlimits := mainFlagSet()
	if err := parseFlags(mfs, nil); err != nil {
		t.Fatal(err)
	}
	rf := runFlagSet()
	if err := rf.fs.Parse([]string{"--", "true"}); err != nil {
		t.Fatal(err)
	}
	run := *rf.f
	if run.listen != "127.0.0.1:0" || main.listen != "127.0.0.1:8080" {
		t.Fatalf("listen: run %q, main %q", run.listen, main.listen)
	}
	// What run has no flag for stays at the main command's default, which is zero for
	// all of these but the key log (taken from $SSLKEYLOGFILE) and the capture modes.
	want := *main
	want.listen, want.keylog = run.listen, ""
	if !reflect.DeepEqual(run, want) {
		t.Fatalf("run's defaults\n%+v\ndiffer from the main command's\n%+v", run, want)
	}
	// A retention.json of the user's applies to run's instance too.
	dir := t.TempDir()
	if err := saveRetention(dir, store.Limits{MaxSessions: 50}); err != nil {
		t.Fatal(err)
	}
	ml, err := mlimits(dir)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := rf.limits(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ml != rl || rl.MaxSessions != 50 {
		t.Fatalf("retention: run %+v, main %+v", rl, ml)
	}
}

// defaultTestFlags are the main command's defaults with a free listen port, for tests
// that start an instance in-process.
func defaultTestFlags() instanceFlags {
	fs, f, _, _ := mainFlagSet()
	if err := parseFlags(fs, []string{"--listen", "127.0.0.1:0"}); err != nil {
		panic(err)
	}
	f.keylog = ""
	return *f
}
