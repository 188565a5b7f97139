package content

import (
	"bytes"
	"errors"
	"mime/multipart"
	"testing"
)

func TestSplitMultipart(t *testing.T) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("title", "hello")
	fw, _ := w.CreateFormFile("file", "a.bin")
	fw.Write([]byte{0, 1, 2, 3})
	w.Close()
	ct := w.FormDataContentType()
	parts, err := SplitMultipart(ct, b.Bytes(), 1<<20)
	if err != nil || len(parts) != 2 || parts[0].Name != "title" || string(parts[0].Body) != "hello" || parts[1].FileName != "a.bin" || parts[1].Size != 4 {
		t.Fatalf("%+v %v", parts, err)
	}
	// Cut capture: the last part is Partial.
	parts, err = SplitMultipart(ct, b.Bytes()[:b.Len()-20], 1<<20)
	if err != nil || len(parts) != 2 || !parts[1].Partial {
		t.Errorf("cut: %+v %v", parts, err)
	}
	// Part cap.
	parts, _ = SplitMultipart(ct, b.Bytes(), 2)
	if string(parts[0].Body) != "he" || !parts[0].Partial {
		t.Errorf("cap: %+v", parts[0])
	}
	for _, bad := range []string{"multipart/form-data", "multipart/form-data; boundary=zzz", "nonsense;;"} {
		if _, err := SplitMultipart(bad, b.Bytes(), 1<<20); !errors.Is(err, ErrMultipart) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if f := FormFields("a=1&b=x+y&a=%zz&&c"); len(f) != 4 || f[1][1] != "x y" || f[2][1] != "%zz" || f[3][0] != "c" {
		t.Errorf("form %q", f)
	}
}
