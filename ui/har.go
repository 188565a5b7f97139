package ui

import (
	"io"

	"inspector/engine/session"
	"inspector/store/har"
)

// StoreHAR returns the HAR codec of package store/har; version goes into log.creator.
func StoreHAR(version string) *HAR {
	return &HAR{
		NewWriter: func(w io.Writer) (HARWriter, error) { return har.NewWriter(w, version) },
		Read:      har.Read,
		Decode: func(r io.Reader, spillDir string, fn func(*session.Session) error) error {
			lim := har.DefaultLimits
			lim.SpillDir = spillDir
			_, err := har.Decode(r, lim, func(s *session.Session, _ session.ID) error { return fn(s) })
			return err
		},
	}
}
