package content

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// pack compresses b with an encoder from outside this package (the standard library,
// brotli), so Decode is never tested only against its own Encode.
func pack(newW func(io.Writer) io.WriteCloser, b []byte) []byte {
	var buf bytes.Buffer
	w := newW(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func gz(b []byte) []byte {
	return pack(func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }, b)
}

func br(b []byte) []byte {
	return pack(func(w io.Writer) io.WriteCloser { return brotli.NewWriter(w) }, b)
}

func deflate(b []byte) []byte {
	return pack(func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) }, b)
}

func zst(b []byte) []byte {
	e, err := zstd.NewWriter(nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	return e.EncodeAll(b, nil)
}

func ce(v string) http.Header { return http.Header{"Content-Encoding": {v}} }

func TestDecodeCodings(t *testing.T) {
	plain := []byte(strings.Repeat("hello brotli and zstd ", 500))
	cases := []struct {
		enc  string
		data []byte
	}{
		{"gzip", gz(plain)},
		{"x-gzip", gz(plain)},
		{"deflate", deflate(plain)},
		{"br", br(plain)},
		{"zstd", zst(plain)},
		{"BR", br(plain)},
		{"gzip, br", br(gz(plain))},
		{"zstd, gzip", gz(zst(plain))},
		{"identity", plain},
		{"", plain},
	}
	for _, c := range cases {
		out, encs, cut, err := Decode(ce(c.enc), c.data, 1<<20)
		if err != nil || cut || !bytes.Equal(out, plain) {
			t.Errorf("%q: err %v cut %v equal %v", c.enc, err, cut, bytes.Equal(out, plain))
		}
		if c.enc == "gzip, br" && strings.Join(encs, ",") != "gzip,br" {
			t.Errorf("encodings %q", encs)
		}
	}
	// Two header lines stack like one list.
	h := http.Header{"Content-Encoding": {"gzip", "br"}}
	if out, _, _, err := Decode(h, br(gz(plain)), 1<<20); err != nil || !bytes.Equal(out, plain) {
		t.Errorf("two lines: %v", err)
	}
}

func TestDecodeBombsAreCapped(t *testing.T) {
	zeros := make([]byte, 32<<20)
	for _, c := range []struct {
		enc  string
		data []byte
	}{{"gzip", gz(zeros)}, {"br", br(zeros)}, {"zstd", zst(zeros)}, {"gzip, br", br(gz(zeros))}} {
		out, _, cut, err := Decode(ce(c.enc), c.data, 1<<20)
		if err != nil || !cut || len(out) != 1<<20 {
			t.Errorf("%s bomb: err %v cut %v len %d", c.enc, err, cut, len(out))
		}
	}
}

func TestDecodeBadInputLosesNothing(t *testing.T) {
	garbage := []byte("this is not compressed at all")
	for _, enc := range []string{"gzip", "br", "zstd", "deflate"} {
		out, _, _, err := Decode(ce(enc), garbage, 1<<20)
		if !errors.Is(err, ErrDamaged) || !bytes.Equal(out, garbage) {
			t.Errorf("%s garbage: err %v out %q", enc, err, out)
		}
	}
	out, encs, _, err := Decode(ce("compress"), garbage, 1<<20)
	if !errors.Is(err, ErrUnsupportedEncoding) || !bytes.Equal(out, garbage) || encs[0] != "compress" {
		t.Errorf("compress: %v %q", err, out)
	}
	if !strings.Contains(err.Error(), "compress") {
		t.Errorf("error does not name the coding: %v", err)
	}
}

func TestDecodeCutCaptureYieldsPrefix(t *testing.T) {
	// Varied text over several zstd blocks (128 KiB each), so a cut frame has output.
	var sb strings.Builder
	for i := 0; sb.Len() < 600<<10; i++ {
		fmt.Fprintf(&sb, "line %d of a capture cut by the cap %x\n", i, i*2654435761)
	}
	plain := []byte(sb.String())
	for _, c := range []struct {
		enc  string
		data []byte
	}{{"gzip", gz(plain)}, {"br", br(plain)}, {"zstd", zst(plain)}} {
		half := c.data[:len(c.data)*2/3]
		out, _, cut, err := Decode(ce(c.enc), half, 1<<20)
		if err != nil || !cut || len(out) == 0 || !bytes.HasPrefix(plain, out) {
			t.Errorf("%s cut: err %v cut %v len %d", c.enc, err, cut, len(out))
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	plain := []byte(strings.Repeat("round trip ", 300))
	for _, encs := range [][]string{{"gzip"}, {"deflate"}, {"br"}, {"zstd"}, {"gzip", "br"}, {"zstd", "gzip"}} {
		enc, err := Encode(encs, plain)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := DecodeCodings(encs, enc, 1<<20)
		if err != nil || !bytes.Equal(out, plain) {
			t.Errorf("%v: %v", encs, err)
		}
		again, _ := Encode(encs, plain)
		if !bytes.Equal(again, enc) {
			t.Errorf("%v: not deterministic", encs)
		}
	}
	if out, err := Encode([]string{"compress"}, plain); !errors.Is(err, ErrUnsupportedEncoding) || !bytes.Equal(out, plain) {
		t.Errorf("compress: %v", err)
	}
}
