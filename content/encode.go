package content

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// Encode applies the codings encs in order (as Codings lists them) to data: the inverse
// of DecodeCodings, for HAR import and edited bodies that must travel encoded again. The
// output is deterministic for a given input. A coding Decode does not support is an
// error (errors.Is ErrUnsupportedEncoding) and data is returned untouched.
func Encode(encs []string, data []byte) ([]byte, error) {
	if !Supported(encs) {
		for _, e := range encs {
			if !Supported([]string{e}) {
				return data, fmt.Errorf("%w: %s", ErrUnsupportedEncoding, e)
			}
		}
	}
	out := data
	for _, e := range encs {
		var b bytes.Buffer
		w, err := NewEncoder(e, &b)
		if err != nil {
			return data, err
		}
		w.Write(out)
		if err := w.Close(); err != nil {
			return data, err
		}
		out = b.Bytes()
	}
	return out, nil
}

// NewEncoder is a streaming encoder of one coding (as Encode applies it) writing to w;
// Close ends the stream without closing w. A coding Decode does not support is gzip, as
// in Encode, which checks first.
func NewEncoder(enc string, w io.Writer) (io.WriteCloser, error) {
	switch enc {
	case "deflate":
		return zlib.NewWriter(w), nil
	case "br":
		return brotli.NewWriterLevel(w, brotli.DefaultCompression), nil
	case "zstd":
		return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	}
	return gzip.NewWriter(w), nil
}
