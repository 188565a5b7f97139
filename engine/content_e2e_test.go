package engine_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/text/encoding/japanese"

	"inspector/content"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/filter"
)

// Origins that answer with brotli and zstd (encoded by the same libraries browsers' CDNs
// use), stacked codings, and text in Shift_JIS: through the proxy the body views decode
// them and body: finds text inside.
func TestModernEncodingsThroughProxy(t *testing.T) {
	page := strings.Repeat("<p>served compressed by a modern CDN</p>\n", 50)
	sjis, _ := japanese.ShiftJIS.NewEncoder().String("<html><head><meta charset=\"Shift_JIS\"></head><body>日本語のページ</body></html>")
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/br":
			w.Header().Set("Content-Encoding", "br")
			bw := brotli.NewWriter(w)
			io.WriteString(bw, page)
			bw.Close()
		case "/zstd":
			w.Header().Set("Content-Encoding", "zstd")
			zw, _ := zstd.NewWriter(w)
			io.WriteString(zw, page)
			zw.Close()
		case "/stacked":
			w.Header().Set("Content-Encoding", "gzip, br")
			b, _ := content.Encode([]string{"gzip", "br"}, []byte(page))
			w.Write(b)
		case "/sjis":
			w.Write([]byte(sjis))
		}
	}))
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH2)
	for _, path := range []string{"/br", "/zstd", "/stacked"} {
		r, _ := http.NewRequest("GET", o.URL+path, nil)
		r.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := p.Next(t)
		// The needle spans two copies of the line, so every encoder writes it as a
		// back-reference: it is never in the encoded bytes.
		needle := "CDN</p>\n<p>served"
		if bytes.Equal(raw, []byte(page)) || bytes.Contains(raw, []byte(needle)) || !bytes.Equal(raw, s.Response.Body.Data) {
			t.Fatalf("%s: the client did not get the encoded body as sent", path)
		}
		if !filter.MustParse(`body:"` + needle + `"`).Match(s) {
			t.Errorf("%s: body: does not find text in the decoded body", path)
		}
		if filter.MustParse(`body:"not on the page"`).Match(s) {
			t.Errorf("%s: body: matches text that is not there", path)
		}
		_, vs := content.SessionViews(s, content.Options{})
		if vs[0].Name != "HTML" || vs[0].Text != page || !strings.Contains(vs[0].Note, "decoded from") {
			t.Errorf("%s: view %s %q", path, vs[0].Name, vs[0].Note)
		}
	}
	resp, err := c.Get(o.URL + "/sjis")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, vs := content.SessionViews(p.Next(t), content.Options{})
	if !strings.Contains(vs[0].Text, "日本語のページ") || !strings.Contains(vs[0].Note, "charset shift_jis") {
		t.Errorf("Shift_JIS page: %q %q", vs[0].Text, vs[0].Note)
	}
}

// GraphQL POST (single and batched) and GET through the proxy: operation type and name,
// the pretty query, variables and the response's errors; gql: finds them.
func TestGraphQLThroughProxy(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH1TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/graphql-response+json")
		io.WriteString(w, `{"data":{"user":null},"errors":[{"message":"user not found","path":["user"]}]}`)
	}))
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH1)
	post := func(body string) {
		resp, err := c.Post(o.URL+"/graphql", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post(`{"query":"query GetUser($id: ID!) { user(id: $id) { name } }","operationName":"GetUser","variables":{"id":"7"}}`)
	single := p.Next(t)
	post(`[{"query":"mutation Rename { rename(to: \"x\") { ok } }"},{"query":"{ me { id } }"}]`)
	batch := p.Next(t)
	resp, err := c.Get(o.URL + "/graphql?query=" + url.QueryEscape("query Feed { feed { id } }"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get := p.Next(t)

	reqV, respV := content.SessionViews(single, content.Options{})
	if g := viewByName(reqV, "GraphQL"); g == nil || !strings.HasPrefix(g.Text, "# query GetUser\nquery GetUser ($id: ID!) {\n  user(id: $id) {\n    name\n  }\n}") {
		t.Errorf("single: %+v", reqV)
	}
	if v := viewByName(reqV, "Variables"); v == nil || !strings.Contains(v.Text, `"id": "7"`) {
		t.Errorf("variables: %+v", reqV)
	}
	if e := viewByName(respV, "GraphQL errors"); e == nil || e.Text != "user not found (at user)" {
		t.Errorf("errors: %+v", respV)
	}
	reqV, _ = content.SessionViews(batch, content.Options{})
	if viewByName(reqV, "GraphQL 1") == nil || viewByName(reqV, "GraphQL 2") == nil {
		t.Errorf("batch: %+v", reqV)
	}
	reqV, _ = content.SessionViews(get, content.Options{})
	if g := viewByName(reqV, "GraphQL"); g == nil || !strings.HasPrefix(g.Text, "# query Feed") {
		t.Errorf("GET: %+v", reqV)
	}
	if op := content.Operation(batch); op != "mutation Rename, query" {
		t.Errorf("batch operation %q", op)
	}
	for expr, want := range map[string]string{"gql:GetUser": "100", "gql:mutation": "010", "gql:query": "111", "gql:Feed": "001"} {
		e := filter.MustParse(expr)
		got := ""
		for _, s := range []*session.Session{single, batch, get} {
			if e.Match(s) {
				got += "1"
			} else {
				got += "0"
			}
		}
		if got != want {
			t.Errorf("%s: %s, want %s", expr, got, want)
		}
	}
}
