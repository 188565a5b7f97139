package content

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"inspector/engine/session"
)

// Errors of Decode, for errors.Is.
var (
	// ErrUnsupportedEncoding: a content coding other than gzip, x-gzip, deflate, br or
	// zstd (compress, for one). The body is returned untouched.
	ErrUnsupportedEncoding = errors.New("content encoding not supported")
	// ErrDamaged wraps a decoder's error for data that is not valid in its coding.
	ErrDamaged = errors.New("damaged encoded body")
)

// DefaultLimit is the decoded size cap the views, the filter and HAR export use.
const DefaultLimit = 8 << 20

// zstdMaxWindow bounds the memory one zstd frame may ask for (the RFC 8878 advice for
// HTTP is at most 8 MiB).
const zstdMaxWindow = 8 << 20

// Codings returns the Content-Encoding codings of h in the order they were applied,
// lower-cased, without "identity".
func Codings(h http.Header) []string { return session.Codings(h) }

// Supported reports whether Decode can undo every coding in encs.
func Supported(encs []string) bool {
	for _, e := range encs {
		switch e {
		case "gzip", "x-gzip", "deflate", "br", "zstd":
		default:
			return false
		}
	}
	return true
}

// Decode undoes the Content-Encoding of h on body (a stacked list such as "gzip, br" is
// undone from the last coding to the first), producing at most limit bytes.
//
// encodings is the list of codings found (nil when there is none). On success err is nil
// and out is the decoded body; truncated says out was cut at limit (a compression bomb,
// or just a big body). A body whose capture was cut short (the stream ends early) yields
// what decoded, with a nil error and truncated set, since a capture cap is the common
// cause. err is non-nil when a coding is not supported (errors.Is ErrUnsupportedEncoding;
// out is body untouched) or the data is damaged (errors.Is ErrDamaged; out is body
// untouched too, so nothing is lost).
func Decode(h http.Header, body []byte, limit int) (out []byte, encodings []string, truncated bool, err error) {
	encs := Codings(h)
	out, truncated, err = DecodeCodings(encs, body, limit)
	return out, encs, truncated, err
}

// DecodeCodings is Decode for a coding list already split (as Codings returns it); gRPC's
// grpc-encoding uses it too.
func DecodeCodings(encs []string, body []byte, limit int) (out []byte, truncated bool, err error) {
	if len(encs) == 0 || len(body) == 0 {
		if len(body) > limit {
			return body[:limit], true, nil
		}
		return body, false, nil
	}
	for _, e := range encs {
		if !Supported([]string{e}) {
			return body, false, fmt.Errorf("%w: %s", ErrUnsupportedEncoding, e)
		}
	}
	out = body
	for i := len(encs) - 1; i >= 0; i-- {
		if len(out) == 0 {
			break
		}
		dec, cut, derr := decodeOne(encs[i], out, limit)
		if derr != nil {
			return body, false, derr
		}
		out = dec
		truncated = truncated || cut
	}
	return out, truncated, nil
}

// decodeOne undoes one coding. cut is true when the output stopped at limit or the input
// ended early after some output.
func decodeOne(enc string, in []byte, limit int) (out []byte, cut bool, err error) {
	var r io.Reader
	switch enc {
	case "gzip", "x-gzip":
		zr, zerr := gzip.NewReader(bytes.NewReader(in))
		if zerr != nil {
			return nil, false, fmt.Errorf("%w: %s: %v", ErrDamaged, enc, zerr)
		}
		r = zr
	case "deflate":
		// RFC 9110 deflate is zlib-wrapped; some servers send raw deflate.
		if zr, zerr := zlib.NewReader(bytes.NewReader(in)); zerr == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(in))
		}
	case "br":
		r = brotli.NewReader(bytes.NewReader(in))
	case "zstd":
		zr, zerr := getZstd(bytes.NewReader(in))
		if zerr != nil {
			return nil, false, fmt.Errorf("%w: zstd: %v", ErrDamaged, zerr)
		}
		defer putZstd(zr)
		r = zr
	}
	dec, rerr := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if len(dec) > limit {
		return dec[:limit], true, nil
	}
	if rerr != nil {
		if len(dec) > 0 && isEarlyEnd(rerr) {
			return dec, true, nil
		}
		return nil, false, fmt.Errorf("%w: %s: %v", ErrDamaged, enc, rerr)
	}
	return dec, false, nil
}

// isEarlyEnd reports whether a decoder error means the input ended before the stream did.
func isEarlyEnd(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// zstdPool keeps streaming zstd decoders (each holds window buffers worth reusing);
// concurrency 1 means they start no goroutines.
var zstdPool sync.Pool

func getZstd(r io.Reader) (*zstd.Decoder, error) {
	if d, ok := zstdPool.Get().(*zstd.Decoder); ok {
		if err := d.Reset(r); err != nil {
			d.Close()
			return nil, err
		}
		return d, nil
	}
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
}

func putZstd(d *zstd.Decoder) {
	if d.Reset(nil) == nil {
		zstdPool.Put(d)
	} else {
		d.Close()
	}
}
