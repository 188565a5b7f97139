package content

import (
	"net/http"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

func TestTextCharsets(t *testing.T) {
	sjis, _ := japanese.ShiftJIS.NewEncoder().String("こんにちは")
	latin, _ := charmap.ISO8859_1.NewEncoder().String("café")
	u16, _ := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String("hé")
	cases := []struct {
		name, ct, body, want, charset string
	}{
		{"content-type", "text/plain; charset=Shift_JIS", sjis, "こんにちは", "shift_jis"},
		{"latin1 label", "text/plain; charset=latin1", latin, "café", "windows-1252"},
		{"bom wins", "text/plain; charset=iso-8859-1", u16, "hé", "utf-16le"},
		{"utf8 bom", "text/plain", "\xEF\xBB\xBFhi", "hi", "utf-8"},
		{"html meta", "text/html", `<html><head><meta charset="shift_jis"></head><body>` + sjis, `<html><head><meta charset="shift_jis"></head><body>こんにちは`, "shift_jis"},
		{"html http-equiv", "text/html", `<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">` + latin, `<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">café`, "windows-1252"},
		{"xml decl", "application/xml", `<?xml version="1.0" encoding="ISO-8859-1"?><a>` + latin + `</a>`, `<?xml version="1.0" encoding="ISO-8859-1"?><a>café</a>`, "windows-1252"},
		{"utf8 default", "application/json", `{"a":"é"}`, `{"a":"é"}`, "utf-8"},
		{"not utf8 guessed", "text/plain", latin, "café", "windows-1252"},
		{"unknown label", "text/plain; charset=x-nonsense", "plain", "plain", "utf-8"},
		{"meta ignored outside html", "application/json", `{"x":"<meta charset=shift_jis>é"}`, `{"x":"<meta charset=shift_jis>é"}`, "utf-8"},
	}
	for _, c := range cases {
		got, cs := Text(c.ct, []byte(c.body))
		if got != c.want || cs != c.charset {
			t.Errorf("%s: got %q (%s), want %q (%s)", c.name, got, cs, c.want, c.charset)
		}
	}
}

func TestDetect(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	cases := []struct {
		ct, body string
		want     Kind
	}{
		{"application/json", `{"a":1}`, KindJSON},
		{"application/json", `{"query":"{ me { id } }"}`, KindGraphQL},
		{"application/json", `[{"query":"query A { a }"},{"query":"mutation B { b }"}]`, KindGraphQL},
		{"application/json", `{"query":"x","other":1}`, KindJSON},
		{"application/problem+json", `{}`, KindJSON},
		{"text/html; charset=utf-8", `<p>x`, KindHTML},
		{"", `<!DOCTYPE html><html>`, KindHTML},
		{"", `<?xml version="1.0"?><a/>`, KindXML},
		{"application/javascript", `var a`, KindJavaScript},
		{"text/css", `a{}`, KindCSS},
		{"", `{"x":[1,2]}`, KindJSON},
		{"text/plain", `hello`, KindText},
		{"", string(png), KindImage},
		{"image/webp", "RIFF", KindImage},
		{"application/grpc", "", KindGRPC},
		{"application/grpc+proto", "\x00\x00\x00\x00\x00", KindGRPC},
		{"application/grpc-web+proto", "\x00", KindGRPCWeb},
		{"application/grpc-web-text", "AAAA", KindGRPCWebText},
		{"application/connect+proto", "\x00", KindConnect},
		{"application/x-protobuf", "\x08\x01", KindProtobuf},
		{"application/vnd.google.protobuf", "\x08\x01", KindProtobuf},
		{"text/event-stream", "data: x\n\n", KindSSE},
		{"", "data: x\n\ndata: y\n\n", KindSSE},
		{"multipart/form-data; boundary=x", "--x", KindMultipart},
		{"application/x-www-form-urlencoded", "a=1", KindForm},
		{"application/octet-stream", "\x00\x01\x02", KindBinary},
		{"text/plain", "", KindEmpty},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.ct != "" {
			h.Set("Content-Type", c.ct)
		}
		if got := Detect(h, []byte(c.body)); got != c.want {
			t.Errorf("Detect(%q, %q) = %s, want %s", c.ct, c.body, got, c.want)
		}
	}
}
