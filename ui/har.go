package ui

import (
	"io"

	"inspector/store/har"
)

// StoreHAR returns the HAR codec of package store/har; version goes into log.creator.
func StoreHAR(version string) *HAR {
	return &HAR{
		NewWriter: func(w io.Writer) (HARWriter, error) { return har.NewWriter(w, version) },
		Read:      har.Read,
	}
}
