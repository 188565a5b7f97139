package session

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestDecodeBody(t *testing.T) {
	plain := []byte(strings.Repeat("hello ", 1000))
	var zl bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(gz(plain))
	zw.Close()
	h := func(v string) http.Header { return http.Header{"Content-Encoding": {v}} }

	if out, enc, err := DecodeBody(h("gzip"), gz(plain), 1<<20); err != nil || enc != "gzip" || !bytes.Equal(out, plain) {
		t.Errorf("gzip: %v %q", err, enc)
	}
	if out, _, err := DecodeBody(h("gzip, deflate"), zl.Bytes(), 1<<20); err != nil || !bytes.Equal(out, plain) {
		t.Errorf("stacked: %v", err)
	}
	if out, enc, err := DecodeBody(http.Header{}, plain, 10); err != nil || enc != "" || len(out) != len(plain) {
		t.Errorf("identity: %v", err)
	}
	if out, _, err := DecodeBody(h("br"), []byte("x"), 10); !errors.Is(err, ErrUnsupportedEncoding) || string(out) != "x" {
		t.Errorf("br: %v", err)
	}
	bomb := gz(make([]byte, 50<<20))
	if out, _, err := DecodeBody(h("gzip"), bomb, 1<<20); !errors.Is(err, ErrDecodedTooLarge) || len(out) != 1<<20 {
		t.Errorf("bomb: %v %d", err, len(out))
	}
	full := gz(plain)
	if out, _, err := DecodeBody(h("gzip"), full[:len(full)/2], 1<<20); err == nil || !bytes.HasPrefix(plain, out) {
		t.Errorf("truncated: %v %d", err, len(out))
	}
	if _, _, err := DecodeBody(h("gzip"), []byte("not gzip"), 10); err == nil {
		t.Error("garbage decoded")
	}
}
