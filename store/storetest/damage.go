// Package storetest has helpers for tests of the session store and its users.
package storetest

import (
	"os"
	"testing"
)

// ZeroInside zeroes every other page of size pageSize between a quarter and three
// quarters of the file at path, leaving bbolt's meta pages and the first pages (the meta
// bucket) intact, as a disk that lost writes leaves a file.
func ZeroInside(tb testing.TB, path string, pageSize int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	zero := make([]byte, pageSize)
	for off := fi.Size() / 4 / pageSize * pageSize; off < fi.Size()*3/4; off += 2 * pageSize {
		if _, err := f.WriteAt(zero, off); err != nil {
			tb.Fatal(err)
		}
	}
}
