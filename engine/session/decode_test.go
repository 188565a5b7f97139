package session

import (
	"net/http"
	"strings"
	"testing"
)

func TestCodings(t *testing.T) {
	h := http.Header{"Content-Encoding": {"GZIP, identity", " br "}}
	if got := strings.Join(Codings(h), ","); got != "gzip,br" {
		t.Errorf("Codings = %q", got)
	}
	if Codings(http.Header{}) != nil {
		t.Error("codings without a header")
	}
}
