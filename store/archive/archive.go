// Package archive reads the session archives of other tools, so a user leaving them
// brings their captures along: Fiddler's .saz, Charles's JSON session (.chlsj) and
// mitmproxy's flow files (tnetstring). It writes .saz too.
//
// Each reader streams: it hands one session at a time to a callback, which the store's
// ImportStream turns into an all-or-nothing import. An archive that is damaged anywhere
// (a corrupt zip, an entry without a response, a truncated tnetstring) is an *Error with
// the entry's number (1-based, in the archive's order) and the reason; nothing of it is
// kept.
//
// Imported sessions carry session.FlagImported and ID 0 (the store numbers them).
package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"inspector/engine/session"
)

// Format names an archive format.
type Format string

// The formats.
const (
	SAZ       Format = "saz"       // Fiddler Session Archive Zip
	Charles   Format = "chlsj"     // Charles JSON session
	Mitmproxy Format = "mitmproxy" // mitmproxy flow file (tnetstring)
	HAR       Format = "har"       // HTTP Archive (store/har reads it)
)

// MaxBody bounds one body of an imported session.
const MaxBody = 256 << 20

// Error is a damaged archive: Entry is the 1-based entry number, 0 for the archive as a
// whole.
type Error struct {
	Format Format
	Entry  int
	Msg    string
}

func (e *Error) Error() string {
	if e.Entry > 0 {
		return fmt.Sprintf("%s: entry %d: %s", e.Format, e.Entry, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Format, e.Msg)
}

func errorf(f Format, entry int, format string, a ...any) error {
	return &Error{Format: f, Entry: entry, Msg: fmt.Sprintf(format, a...)}
}

// ErrUnknownFormat: Detect recognised neither the name nor the content.
var ErrUnknownFormat = errors.New("not a known archive: want .har, .saz (Fiddler), .chlsj (Charles JSON session) or a mitmproxy flow file")

// Detect names the format of a file from its extension, else from its first bytes.
func Detect(name string, head []byte) (Format, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".saz":
		return SAZ, nil
	case ".chlsj":
		return Charles, nil
	case ".har":
		return HAR, nil
	case ".flow", ".mitm", ".flows":
		return Mitmproxy, nil
	}
	h := bytes.TrimLeft(head, " \t\r\n\xef\xbb\xbf")
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return SAZ, nil
	case bytes.HasPrefix(h, []byte("[")):
		return Charles, nil
	case bytes.HasPrefix(h, []byte("{")):
		return HAR, nil
	case len(head) > 0 && head[0] >= '1' && head[0] <= '9':
		if i := bytes.IndexByte(head, ':'); i > 0 && i < 12 {
			return Mitmproxy, nil
		}
	}
	return "", ErrUnknownFormat
}

// Read reads the archive at path in format f and hands each session to add, in archive
// order. HAR is not read here (store/har does).
func Read(path string, f Format, add func(*session.Session) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	switch f {
	case SAZ:
		fi, err := file.Stat()
		if err != nil {
			return err
		}
		return ReadSAZ(file, fi.Size(), add)
	case Charles:
		return ReadCharles(file, add)
	case Mitmproxy:
		return ReadMitmproxy(file, add)
	}
	return fmt.Errorf("archive: %s is not read by this package", f)
}

// readAllMax reads r whole, failing past max bytes.
func readAllMax(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d MiB", max>>20)
	}
	return b, nil
}
