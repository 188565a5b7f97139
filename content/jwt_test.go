package content

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func makeJWT(header, claims string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(header)) + "." + e([]byte(claims)) + "." + e([]byte("signature-bytes"))
}

func TestJWT(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	exp := now.Add(-3 * time.Hour).Unix()
	tok := makeJWT(`{"alg":"HS256","typ":"JWT"}`, `{"sub":"42","exp":`+itoa(exp)+`,"iat":`+itoa(now.Add(-4*time.Hour).Unix())+`}`)
	j, ok := ParseJWT(tok, now)
	if !ok || j.Alg != "HS256" || !j.Expired || !strings.Contains(j.Claims, `"sub": "42"`) || j.Signature != 15 {
		t.Fatalf("%+v %v", j, ok)
	}
	if !strings.HasPrefix(j.Times[0], "exp: expired 3 h ago") || !strings.HasPrefix(j.Times[1], "iat: issued 4 h ago") {
		t.Errorf("times %q", j.Times)
	}
	fresh := makeJWT(`{"alg":"RS256"}`, `{"exp":`+itoa(now.Add(10*time.Minute).Unix())+`}`)
	h := http.Header{"Authorization": {"Bearer " + fresh}, "Cookie": {"theme=dark; sid=" + tok}}
	js := FindJWTs(h, now)
	if len(js) != 2 || js[0].Where != "Authorization" || js[1].Where != "Cookie sid" || js[0].Times[0][:20] != "exp: expires in 10 m" {
		t.Errorf("found %+v", js)
	}
	resp := http.Header{"Set-Cookie": {"at=" + fresh + "; Path=/; HttpOnly"}}
	if js := FindJWTs(resp, now); len(js) != 1 || js[0].Where != "Set-Cookie at" {
		t.Errorf("set-cookie %+v", js)
	}
	for _, bad := range []string{"a.b", "x.y.z", makeJWT(`{"typ":"JWT"}`, `{}`), makeJWT(`{"alg":"none"}`, `[1]`), "Basic dXNlcjpwYXNz"} {
		if _, ok := ParseJWT(bad, now); ok {
			t.Errorf("%q taken for a JWT", bad)
		}
	}
	for d, want := range map[time.Duration]string{40 * time.Second: "40 s", 3 * time.Minute: "3 min", 3 * time.Hour: "3 h", 72 * time.Hour: "3 d", 59 * time.Minute: "59 min", time.Hour: "1 h", 90 * time.Second: "2 min", 200 * 24 * time.Hour: "7 mo", 1000 * 24 * time.Hour: "3 y"} {
		if got := Ago(d); got != want {
			t.Errorf("Ago(%v) = %q, want %q", d, got, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestBodyJWTs(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	id := makeJWT(`{"alg":"RS256","kid":"k1"}`, `{"sub":"u1","exp":`+itoa(now.Add(time.Hour).Unix())+`}`)
	body := `{"access_token":"opaque-not-a-jwt","id_token":"` + id + `","token_type":"Bearer","nested":{"list":["x","` + id + `"]}}`
	js := FindBodyJWTs([]byte(body), now)
	if len(js) != 2 || js[0].Where != "body id_token" || js[1].Where != "body nested.list[1]" || !strings.HasPrefix(js[0].Times[0], "exp: expires in 1 h") {
		t.Fatalf("%+v", js)
	}
	vs := Views(http.Header{"Content-Type": {"application/json"}}, []byte(body), Options{Now: now})
	if len(vs) != 3 || vs[1].Name != "JWT (body id_token)" || vs[1].Kind != KindJWT {
		t.Errorf("views %+v", vs)
	}
	if FindBodyJWTs([]byte(`{"a":"eyJ-but-not"}`), now) != nil || FindBodyJWTs([]byte(`not json eyJ`), now) != nil {
		t.Error("non-JWTs found")
	}
}
