package content

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"
)

// Seeds in the code; more under testdata/fuzz. `make fuzz-short` explores each briefly.

func FuzzProtoRaw(f *testing.F) {
	f.Add(buildMsg())
	f.Add([]byte{0x0a, 0x03, 'a', 'b', 'c'})
	f.Add([]byte{0x0b, 0x08, 0x01, 0x0c})
	f.Fuzz(func(t *testing.T, b []byte) {
		fields, err := DecodeProtoRaw(b)
		s := FormatProtoRaw(fields)
		if err == nil && len(b) > 0 && len(fields) == 0 {
			t.Fatalf("%x decoded to no fields without an error", b)
		}
		if len(fields) > 0 && s == "" {
			t.Fatal("fields formatted to nothing")
		}
	})
}

func FuzzSplitFrames(f *testing.F) {
	f.Add(byte(0), []byte("\x00\x00\x00\x00\x03abc\x01\x00\x00\x00\x00"))
	f.Add(byte(1), []byte("\x00\x00\x00\x00\x01x\x80\x00\x00\x00\x0fgrpc-status: 0\r\n"))
	f.Add(byte(2), []byte("\x02\x00\x00\x00\x02{}"))
	f.Fuzz(func(t *testing.T, k byte, b []byte) {
		kind := []Kind{KindGRPC, KindGRPCWeb, KindConnect}[int(k)%3]
		frames, err := SplitFrames(kind, b)
		used := 0
		for i, fr := range frames {
			used += 5 + len(fr.Data)
			if fr.Partial != (len(fr.Data) < fr.Size) || fr.Partial && i != len(frames)-1 {
				t.Fatalf("frame %d: %d of %d bytes, partial %v", i, len(fr.Data), fr.Size, fr.Partial)
			}
			if fr.Trailer {
				ParseTrailerFrame(fr.Data)
			}
		}
		if used > len(b) || err == nil && used != len(b) {
			t.Fatalf("frames cover %d of %d bytes (err %v)", used, len(b), err)
		}
		if dec, err := DecodeGRPCWebText(b); err == nil && len(dec) > len(b) {
			t.Fatal("base64 decoded longer than its input")
		}
	})
}

func FuzzParseSSE(f *testing.F) {
	f.Add([]byte("id: 1\nevent: e\ndata: a\ndata: b\nretry: 10\n\n: c\ndata:x\r\n\r\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs := ParseSSE(b)
		lines := bytes.Count(b, []byte("\n")) + bytes.Count(b, []byte("\r")) + 1
		if len(evs) > lines {
			t.Fatalf("%d events from %d lines", len(evs), lines)
		}
		for i, e := range evs {
			if strings.ContainsAny(e.Data, "\r") || strings.ContainsAny(e.ID, "\r\n") || strings.ContainsAny(e.Event, "\r\n") {
				t.Fatalf("event %d holds a line break: %+v", i, e)
			}
			if e.Partial && i != len(evs)-1 {
				t.Fatalf("partial event %d is not the last", i)
			}
		}
		LLMText(evs)
	})
}

func FuzzSplitMultipart(f *testing.F) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.SetBoundary("XyZ")
	w.WriteField("a", "1")
	fw, _ := w.CreateFormFile("f", "x.bin")
	fw.Write([]byte{0, 1, 2})
	w.Close()
	f.Add(b.Bytes())
	f.Add([]byte("--XyZ\r\n\r\nbody\r\n--XyZ--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		const limit = 64
		parts, _ := SplitMultipart("multipart/form-data; boundary=XyZ", body, limit)
		total := 0
		for _, p := range parts {
			if len(p.Body) > limit || p.Size != len(p.Body) {
				t.Fatalf("part of %d bytes (size %d) over the cap", len(p.Body), p.Size)
			}
			total += len(p.Body)
		}
		if total > len(body) {
			t.Fatalf("parts hold %d bytes of a %d-byte body", total, len(body))
		}
	})
}

// FuzzViews runs every viewer on arbitrary bodies under arbitrary types and codings:
// no panic, every view within the text cap, and the decoded body never over the limit.
func FuzzViews(f *testing.F) {
	f.Add("application/grpc", "", []byte("\x00\x00\x00\x00\x02\x08\x01"))
	f.Add("application/grpc-web-text", "", []byte("AAAAAAIIAQ=="))
	f.Add("application/json", "", []byte(`{"query":"query A { a }","variables":{"x":1}}`))
	f.Add("text/event-stream", "", []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"))
	f.Add("multipart/form-data; boundary=b", "", []byte("--b\r\n\r\nx\r\n--b--"))
	f.Add("text/html; charset=shift_jis", "", []byte("<meta charset=euc-jp>\x82\xa0"))
	f.Add("application/octet-stream", "br", []byte{0x1b, 0x03, 0x00, 0xf8, 0xa5, 0x40, 0x42, 0x02})
	f.Fuzz(func(t *testing.T, ct, ce string, body []byte) {
		h := map[string][]string{"Content-Type": {ct}}
		if ce != "" {
			h["Content-Encoding"] = []string{ce}
		}
		const textCap = 4096
		for _, req := range []bool{true, false} {
			for _, v := range Views(h, body, Options{Request: req, URL: "https://x/a.B/C?query=%7Ba%7D", TextCap: textCap, Limit: 1 << 16}) {
				if len(v.Text) > textCap {
					t.Fatalf("view %s: %d bytes over the cap", v.Name, len(v.Text))
				}
			}
		}
	})
}
