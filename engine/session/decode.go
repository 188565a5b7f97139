package session

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Errors of DecodeBody, for errors.Is.
var (
	// ErrUnsupportedEncoding: a content coding other than gzip, x-gzip or deflate (br and
	// zstd need modules outside the standard library).
	ErrUnsupportedEncoding = errors.New("content encoding not supported")
	// ErrDecodedTooLarge: the decoded body was cut at the limit (a compression bomb, or
	// just a big body).
	ErrDecodedTooLarge = errors.New("decoded body exceeds the limit")
)

// Codings returns the Content-Encoding codings of h in the order they were applied,
// lower-cased, without "identity".
func Codings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for _, e := range strings.Split(v, ",") {
			if e = strings.ToLower(strings.TrimSpace(e)); e != "" && e != "identity" {
				out = append(out, e)
			}
		}
	}
	return out
}

// DecodeBody undoes the Content-Encoding of h on data (codings undone in reverse order),
// producing at most limit bytes. It is the one body decoder behind previews, `body:`
// filters and HAR export.
//
// On success err is nil and out is the whole decoded body. Otherwise out is what could be
// decoded and err says why it stops there: ErrUnsupportedEncoding (out is data untouched),
// ErrDecodedTooLarge (out holds exactly limit bytes), or the decoder's error for damaged or
// truncated data (out holds what decoded before it, possibly nothing). encoding is the
// Content-Encoding as found, "" when there is none.
func DecodeBody(h http.Header, data []byte, limit int) (out []byte, encoding string, err error) {
	encs := Codings(h)
	if len(encs) == 0 {
		return data, "", nil
	}
	encoding = strings.Join(encs, ", ")
	for _, e := range encs {
		if e != "gzip" && e != "x-gzip" && e != "deflate" {
			return data, encoding, fmt.Errorf("%w: %s", ErrUnsupportedEncoding, e)
		}
	}
	out = data
	for i := len(encs) - 1; i >= 0; i-- {
		if len(out) == 0 {
			break
		}
		var r io.Reader
		switch encs[i] {
		case "deflate":
			// RFC 9110 deflate is zlib-wrapped; some servers send raw deflate.
			if zr, zerr := zlib.NewReader(bytes.NewReader(out)); zerr == nil {
				r = zr
			} else {
				r = flate.NewReader(bytes.NewReader(out))
			}
		default:
			zr, zerr := gzip.NewReader(bytes.NewReader(out))
			if zerr != nil {
				return nil, encoding, fmt.Errorf("%s: %w", encs[i], zerr)
			}
			r = zr
		}
		dec, rerr := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if len(dec) > limit {
			return dec[:limit], encoding, ErrDecodedTooLarge
		}
		if rerr != nil {
			return dec, encoding, fmt.Errorf("%s: %w", encs[i], rerr)
		}
		out = dec
	}
	return out, encoding, nil
}
