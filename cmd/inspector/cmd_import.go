package main

import (
	"fmt"
	"io"
	"os"

	"inspector/engine/session"
	"inspector/store"
	"inspector/store/archive"
	"inspector/store/har"
)

func init() {
	register("import", "add the sessions of an archive: HAR, Fiddler .saz, Charles .chlsj, mitmproxy flows (all or nothing)", runImportArchive)
}

func runImportArchive(args []string) error {
	fs := newFlagSet("import")
	dataDir := dataDirFlag(fs)
	format := fs.String("format", "", "the archive's format: har, saz, chlsj or mitmproxy (default: from the name, else the content)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("import takes one FILE")
	}
	file := fs.Arg(0)
	f := archive.Format(*format)
	switch f {
	case "":
		in, err := os.Open(file)
		if err != nil {
			return err
		}
		head := make([]byte, 512)
		n, _ := io.ReadFull(in, head)
		in.Close()
		if f, err = archive.Detect(file, head[:n]); err != nil {
			return fmt.Errorf("import %s: %w", file, err)
		}
	case archive.HAR, archive.SAZ, archive.Charles, archive.Mitmproxy:
	default:
		return usagef("--format %q: want har, saz, chlsj or mitmproxy", *format)
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	cmd := "import " + string(f)
	if f == archive.HAR {
		return runImport(dir, cmd, file, importHARInto, func(api *controlClient, r io.Reader) (importResult, error) { return api.importHAR(r) })
	}
	return runImport(dir, cmd, file, func(st *store.Store, _ io.Reader) (importResult, error) {
		return importInto(st, func(add func(*session.Session) error) error { return archive.Read(file, f, add) })
	}, func(api *controlClient, _ io.Reader) (importResult, error) {
		// A running instance takes HAR: the archive streams to it as one, and a damaged
		// archive breaks the upload, so the instance adds nothing.
		pr, pw := io.Pipe()
		readErr := make(chan error, 1)
		go func() {
			hw, err := har.NewWriter(pw, version)
			if err == nil {
				err = archive.Read(file, f, hw.Add)
			}
			if err == nil {
				err = hw.Close()
			}
			readErr <- err
			pw.CloseWithError(err)
		}()
		res, err := api.importHAR(pr)
		pr.CloseWithError(io.ErrClosedPipe)
		if rerr := <-readErr; rerr != nil && rerr != io.ErrClosedPipe {
			return res, rerr // the archive's own reason, not the upload's
		}
		return res, err
	})
}
