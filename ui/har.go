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
		Decode: func(r io.Reader, fn func(*session.Session) error) error {
			_, err := har.Decode(r, har.DefaultLimits, func(s *session.Session, _ session.ID) error { return fn(s) })
			return err
		},
	}
}
