package contract_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"inspector/contract"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// The known API: 24 operations with path parameters of every kind, nested objects,
// arrays, enums, nullable fields and several status codes. The test origin serves it,
// real clients call it through the engine, and the inferred document is compared with it.

type specOp struct {
	method, template string
	path             func(r *rand.Rand) string // a concrete path
	query            func(r *rand.Rand) string
	reqBody          func(r *rand.Rand) any
	status           []int // statuses it answers, picked by the test
	resp             func(r *rand.Rand, status int) any
	fields           map[string]string // JSON path in the 2xx response -> "type" or "type/format"
}

func user(r *rand.Rand) map[string]any {
	var nick any
	if r.Intn(3) == 0 {
		nick = nil
	} else {
		nick = fmt.Sprintf("nick%d", r.Intn(1000))
	}
	return map[string]any{
		"id": r.Intn(100000) + 1, "name": fmt.Sprintf("User %d", r.Intn(1000)),
		"email":    fmt.Sprintf("u%d@example.com", r.Intn(1000)),
		"role":     []string{"admin", "member", "guest"}[r.Intn(3)],
		"created":  time.Unix(1700000000+int64(r.Intn(1e7)), 0).UTC().Format(time.RFC3339),
		"nickname": nick,
		"address": map[string]any{"city": "Town" + strconv.Itoa(r.Intn(50)), "zip": fmt.Sprintf("%05d", r.Intn(99999)),
			"geo": map[string]any{"lat": r.Float64()*180 - 90, "lon": r.Float64()*360 - 180}},
		"tags": []any{"t" + strconv.Itoa(r.Intn(9)), "t" + strconv.Itoa(r.Intn(9))},
	}
}

var userFields = map[string]string{"id": "integer", "name": "string", "email": "string/email", "role": "string",
	"created": "string/date-time", "nickname": "string", "address": "object", "address.city": "string",
	"address.zip": "string", "address.geo": "object", "address.geo.lat": "number", "address.geo.lon": "number",
	"tags": "array", "tags[]": "string"}

func uuid(r *rand.Rand) string {
	b := make([]byte, 16)
	r.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func order(r *rand.Rand) map[string]any {
	items := []any{}
	for i := 0; i < 1+r.Intn(3); i++ {
		items = append(items, map[string]any{"sku": fmt.Sprintf("sku-%04d", r.Intn(9999)), "qty": 1 + r.Intn(5), "price": float64(r.Intn(10000)) / 100})
	}
	var note any
	if r.Intn(2) == 0 {
		note = "leave at door"
	}
	return map[string]any{"id": uuid(r), "status": []string{"pending", "paid", "shipped", "cancelled"}[r.Intn(4)],
		"items": items, "total": float64(r.Intn(100000)) / 100, "note": note, "placed": time.Unix(1700000000+int64(r.Intn(1e7)), 0).UTC().Format(time.RFC3339)}
}

var orderFields = map[string]string{"id": "string/uuid", "status": "string", "items": "array", "items[]": "object",
	"items[].sku": "string", "items[].qty": "integer", "items[].price": "number", "total": "number", "note": "string",
	"placed": "string/date-time"}

func product(r *rand.Rand) map[string]any {
	return map[string]any{"sku": fmt.Sprintf("sku-%04d-%s", r.Intn(9999), string(rune('a'+r.Intn(26)))), "title": "Product " + strconv.Itoa(r.Intn(500)),
		"price": map[string]any{"amount": r.Intn(100000), "currency": []string{"EUR", "USD"}[r.Intn(2)]},
		"stock": r.Intn(100), "homepage": "https://shop.example/p/" + strconv.Itoa(r.Intn(500)), "active": r.Intn(2) == 0}
}

var productFields = map[string]string{"sku": "string", "title": "string", "price": "object", "price.amount": "integer",
	"price.currency": "string", "stock": "integer", "homepage": "string/uri", "active": "boolean"}

func prefixed(prefix string, m map[string]string) map[string]string {
	out := map[string]string{prefix: "array"}
	for k, v := range m {
		out[prefix+"[]."+k] = v
	}
	if prefix == "" {
		out = map[string]string{"[]": "object"}
		for k, v := range m {
			out["[]."+k] = v
		}
	}
	return out
}

func many(r *rand.Rand, f func(*rand.Rand) map[string]any) []any {
	out := []any{}
	for i := 0; i < 1+r.Intn(3); i++ {
		out = append(out, f(r))
	}
	return out
}

func errBody(r *rand.Rand, status int) any {
	return map[string]any{"error": map[string]any{"code": status, "message": "failed " + strconv.Itoa(r.Intn(100))}}
}

func id(r *rand.Rand) string { return strconv.Itoa(r.Intn(900000) + 100) }

func sku(r *rand.Rand) string { return fmt.Sprintf("sku-%04d-%c", r.Intn(9999), 'a'+r.Intn(26)) }

func knownSpec() []specOp {
	u := func(r *rand.Rand, st int) any {
		if st >= 400 {
			return errBody(r, st)
		}
		return user(r)
	}
	o := func(r *rand.Rand, st int) any {
		if st >= 400 {
			return errBody(r, st)
		}
		return order(r)
	}
	pr := func(r *rand.Rand, st int) any { return product(r) }
	page := func(r *rand.Rand, st int) any {
		var next any
		if r.Intn(2) == 0 {
			next = "cursor" + strconv.Itoa(r.Intn(1000))
		}
		return map[string]any{"items": many(r, product), "next": next, "total": r.Intn(1000)}
	}
	pageFields := prefixed("items", productFields)
	pageFields["next"], pageFields["total"] = "string", "integer"
	review := func(r *rand.Rand) map[string]any {
		return map[string]any{"id": r.Intn(1e6), "stars": 1 + r.Intn(5), "text": "ok", "author": map[string]any{"id": r.Intn(1e5), "name": "A"}}
	}
	reviewFields := map[string]string{"id": "integer", "stars": "integer", "text": "string", "author": "object", "author.id": "integer", "author.name": "string"}
	none := func(*rand.Rand) string { return "" }
	return []specOp{
		{method: "GET", template: "/users", path: func(*rand.Rand) string { return "/users" }, query: func(r *rand.Rand) string { return "page=" + strconv.Itoa(1+r.Intn(9)) },
			status: []int{200}, resp: func(r *rand.Rand, _ int) any { return many(r, user) }, fields: prefixed("", userFields)},
		{method: "POST", template: "/users", path: func(*rand.Rand) string { return "/users" }, reqBody: func(r *rand.Rand) any {
			return map[string]any{"name": "N", "email": "n@example.com", "password": "hunter2-" + strconv.Itoa(r.Intn(99))}
		}, status: []int{201, 400}, resp: u, fields: userFields},
		{method: "GET", template: "/users/me", path: func(*rand.Rand) string { return "/users/me" }, status: []int{200}, resp: u, fields: userFields},
		{method: "GET", template: "/users/{userId}", path: func(r *rand.Rand) string { return "/users/" + id(r) }, status: []int{200, 404}, resp: u, fields: userFields},
		{method: "PUT", template: "/users/{userId}", path: func(r *rand.Rand) string { return "/users/" + id(r) }, reqBody: func(r *rand.Rand) any { return user(r) }, status: []int{200}, resp: u, fields: userFields},
		{method: "DELETE", template: "/users/{userId}", path: func(r *rand.Rand) string { return "/users/" + id(r) }, status: []int{204}},
		{method: "GET", template: "/users/{userId}/orders", path: func(r *rand.Rand) string { return "/users/" + id(r) + "/orders" }, status: []int{200},
			resp: func(r *rand.Rand, _ int) any { return many(r, order) }, fields: prefixed("", orderFields)},
		{method: "POST", template: "/users/{userId}/orders", path: func(r *rand.Rand) string { return "/users/" + id(r) + "/orders" }, reqBody: func(r *rand.Rand) any { return order(r) }, status: []int{201, 422}, resp: o, fields: orderFields},
		{method: "GET", template: "/users/{userId}/orders/{orderId}", path: func(r *rand.Rand) string { return "/users/" + id(r) + "/orders/" + uuid(r) }, status: []int{200}, resp: o, fields: orderFields},
		{method: "GET", template: "/products", path: func(*rand.Rand) string { return "/products" }, query: func(r *rand.Rand) string { return "limit=" + strconv.Itoa(10+r.Intn(40)) + "&inStock=true" }, status: []int{200}, resp: page, fields: pageFields},
		{method: "GET", template: "/products/search", path: func(*rand.Rand) string { return "/products/search" }, query: func(r *rand.Rand) string { return "q=word" + strconv.Itoa(r.Intn(50)) }, status: []int{200}, resp: page, fields: pageFields},
		{method: "GET", template: "/products/{productId}", path: func(r *rand.Rand) string { return "/products/" + sku(r) }, status: []int{200}, resp: pr, fields: productFields},
		{method: "GET", template: "/products/{productId}/reviews", path: func(r *rand.Rand) string { return "/products/" + sku(r) + "/reviews" }, status: []int{200},
			resp: func(r *rand.Rand, _ int) any { return many(r, review) }, fields: prefixed("", reviewFields)},
		{method: "POST", template: "/products/{productId}/reviews", path: func(r *rand.Rand) string { return "/products/" + sku(r) + "/reviews" }, reqBody: func(r *rand.Rand) any { return review(r) },
			status: []int{201}, resp: func(r *rand.Rand, _ int) any { return review(r) }, fields: reviewFields},
		{method: "GET", template: "/orders/{orderId}", path: func(r *rand.Rand) string { return "/orders/" + uuid(r) }, status: []int{200, 404}, resp: o, fields: orderFields},
		{method: "PATCH", template: "/orders/{orderId}", path: func(r *rand.Rand) string { return "/orders/" + uuid(r) }, reqBody: func(r *rand.Rand) any { return map[string]any{"note": "x"} }, status: []int{200}, resp: o, fields: orderFields},
		{method: "GET", template: "/orders/{orderId}/items", path: func(r *rand.Rand) string { return "/orders/" + uuid(r) + "/items" }, status: []int{200},
			resp: func(r *rand.Rand, _ int) any { return order(r)["items"] }, fields: map[string]string{"[]": "object", "[].sku": "string", "[].qty": "integer", "[].price": "number"}},
		{method: "GET", template: "/health", path: func(*rand.Rand) string { return "/health" }, status: []int{200},
			resp: func(r *rand.Rand, _ int) any {
				return map[string]any{"status": []string{"ok", "degraded"}[r.Intn(2)], "uptime": r.Intn(1e6)}
			}, fields: map[string]string{"status": "string", "uptime": "integer"}},
		{method: "GET", template: "/reports/{reportId}", path: func(r *rand.Rand) string { return fmt.Sprintf("/reports/2026-%02d-%02d", 1+r.Intn(12), 1+r.Intn(28)) }, status: []int{200},
			resp: func(r *rand.Rand, _ int) any {
				return map[string]any{"day": "2026-01-02", "revenue": float64(r.Intn(1e6)) / 100}
			}, fields: map[string]string{"day": "string/date", "revenue": "number"}},
		{method: "GET", template: "/files/{fileId}", path: func(r *rand.Rand) string { b := make([]byte, 20); r.Read(b); return fmt.Sprintf("/files/%x", b) }, status: []int{200},
			resp: func(r *rand.Rand, _ int) any {
				return map[string]any{"size": int64(5e9) + int64(r.Intn(1e6)), "mime": "image/png"}
			}, fields: map[string]string{"size": "integer/int64", "mime": "string"}},
		{method: "POST", template: "/auth/login", path: func(*rand.Rand) string { return "/auth/login" }, reqBody: func(r *rand.Rand) any {
			return map[string]any{"user": "a", "password": "secret" + strconv.Itoa(r.Intn(9))}
		},
			status: []int{200, 401}, resp: func(r *rand.Rand, st int) any {
				if st != 200 {
					return errBody(r, st)
				}
				return map[string]any{"token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "expires": 3600}
			}, fields: map[string]string{"token": "string", "expires": "integer"}},
		{method: "GET", template: "/categories/{categoryId}/products", path: func(r *rand.Rand) string { return "/categories/" + id(r) + "/products" }, status: []int{200}, resp: page, fields: pageFields},
		{method: "GET", template: "/stats", path: func(*rand.Rand) string { return "/stats" }, query: none, status: []int{200},
			resp: func(r *rand.Rand, _ int) any {
				return map[string]any{"users": r.Intn(1e6), "ratio": r.Float64(), "top": []any{map[string]any{"sku": "a", "n": 1}}}
			},
			fields: map[string]string{"users": "integer", "ratio": "number", "top": "array", "top[]": "object", "top[].sku": "string", "top[].n": "integer"}},
		{method: "HEAD", template: "/health", path: func(*rand.Rand) string { return "/health" }, status: []int{200}},
	}
}

// specOrigin answers a request with the status and body the client asked for in headers
// (the client knows which operation it calls).
func specOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		st, _ := strconv.Atoi(r.Header.Get("X-Want-Status"))
		if b := r.Header.Get("X-Want-Body"); b != "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(st)
			io.WriteString(w, b)
			return
		}
		w.WriteHeader(st)
	})
}

func runSpecTraffic(t *testing.T, perOp int) []*session.Session {
	o := et.StartOrigin(t, et.OriginH2TLS, specOrigin())
	p := et.StartProxy(t, nil, o)
	client := p.Client(t, et.ClientH2)
	r := rand.New(rand.NewSource(7))
	var out []*session.Session
	for _, op := range knownSpec() {
		for i := 0; i < perOp; i++ {
			path := op.path(r)
			if op.query != nil {
				if q := op.query(r); q != "" {
					path += "?" + q
				}
			}
			var body io.Reader
			if op.reqBody != nil {
				b, _ := json.Marshal(op.reqBody(r))
				body = bytes.NewReader(b)
			}
			req, _ := http.NewRequest(op.method, o.URL+path, body)
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			st := op.status[i%len(op.status)]
			req.Header.Set("X-Want-Status", strconv.Itoa(st))
			if op.resp != nil && st != 204 && op.method != "HEAD" {
				b, _ := json.Marshal(op.resp(r, st))
				req.Header.Set("X-Want-Body", string(b))
			}
			req.Header.Set("Authorization", "Bearer tok"+strconv.Itoa(r.Intn(1000)))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out = append(out, p.Next(t))
		}
	}
	return out
}

// schemaAt finds the schema at a JSON path ("a.b", "a[]", "[].x") in s.
func schemaAt(s *openapi3.Schema, path string) *openapi3.Schema {
	for path != "" && s != nil {
		switch {
		case strings.HasPrefix(path, "[]"):
			if s.Items == nil {
				return nil
			}
			s, path = s.Items.Value, strings.TrimPrefix(strings.TrimPrefix(path, "[]"), ".")
		default:
			name := path
			rest := ""
			if i := strings.IndexAny(path, ".["); i >= 0 {
				name, rest = path[:i], strings.TrimPrefix(path[i:], ".")
			}
			ref := s.Properties[name]
			if ref == nil {
				return nil
			}
			s, path = ref.Value, rest
		}
	}
	return s
}

func typeOf(s *openapi3.Schema) string {
	if s == nil || s.Type == nil {
		return "?"
	}
	for _, t := range *s.Type {
		if t != "null" {
			if s.Format != "" {
				return t + "/" + s.Format
			}
			return t
		}
	}
	return "null"
}

func TestInferKnownSpec(t *testing.T) {
	t.Parallel()
	sessions := runSpecTraffic(t, 14)
	in := contract.NewInferrer()
	for _, s := range sessions {
		in.Add(s)
	}
	doc := in.Document(contract.Options{})

	// The document is valid OpenAPI (kin-openapi's own validation, after a round trip
	// through its loader as a user's file would take).
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		t.Fatalf("the inferred document is not valid: %v", err)
	}

	spec := knownSpec()
	want := map[string]bool{}
	for _, op := range spec {
		want[op.method+" "+op.template] = true
	}
	got := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			got[m+" "+path] = true
		}
	}
	// Path templates recovered (parameter names may differ: compare with names blanked).
	norm := func(s string) string {
		var b strings.Builder
		skip := false
		for _, r := range s {
			switch {
			case r == '{':
				skip = true
				b.WriteString("{}")
			case r == '}':
				skip = false
			case !skip:
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	gotNorm := map[string]bool{}
	for k := range got {
		gotNorm[norm(k)] = true
	}
	hit := 0
	for k := range want {
		if gotNorm[norm(k)] {
			hit++
		} else {
			t.Logf("missed operation %s", k)
		}
	}
	for k := range got {
		found := false
		for w := range want {
			if norm(w) == norm(k) {
				found = true
			}
		}
		if !found {
			t.Errorf("inferred an operation the API does not have: %s (a fixed word templated, or an id kept)", k)
		}
	}
	rate := float64(hit) / float64(len(want))
	t.Logf("path templates: %d of %d (%.0f%%)", hit, len(want), rate*100)
	if rate < 0.95 {
		t.Errorf("recovered %.0f%% of the path templates, want >= 95%%", rate*100)
	}

	// Field types in the 2xx responses.
	fields, right := 0, 0
	for _, op := range spec {
		if op.fields == nil {
			continue
		}
		var item *openapi3.PathItem
		for path, it := range doc.Paths.Map() {
			if norm(path) == norm(op.template) {
				item = it
			}
		}
		if item == nil {
			fields += len(op.fields)
			continue
		}
		o := item.GetOperation(op.method)
		var sch *openapi3.Schema
		if o != nil {
			for _, st := range []string{"200", "201"} {
				if r := o.Responses.Value(st); r != nil && r.Value.Content["application/json"] != nil {
					sch = r.Value.Content["application/json"].Schema.Value
				}
			}
		}
		for path, want := range op.fields {
			fields++
			var s *openapi3.Schema
			if strings.HasPrefix(path, "[]") {
				s = schemaAt(sch, path)
			} else if sch != nil {
				s = schemaAt(sch, path)
			}
			if typeOf(s) == want {
				right++
			} else {
				t.Logf("%s %s: field %s is %s, want %s", op.method, op.template, path, typeOf(s), want)
			}
		}
	}
	frate := float64(right) / float64(fields)
	t.Logf("field types: %d of %d (%.0f%%)", right, fields, frate*100)
	if frate < 0.90 {
		t.Errorf("recovered %.0f%% of the field types, want >= 90%%", frate*100)
	}

	// Enums, nullable, required, security, masked examples.
	users := doc.Paths.Value("/users/me").Get.Responses.Value("200").Value.Content["application/json"].Schema.Value
	if role := users.Properties["role"].Value; len(role.Enum) != 3 {
		t.Errorf("role enum %v, want the three roles", role.Enum)
	}
	if nick := users.Properties["nickname"].Value; !nick.Type.Includes("null") {
		t.Errorf("nickname type %v, want nullable", *nick.Type)
	}
	if !contains(users.Required, "id") || contains(users.Required, "nickname") && false {
		t.Errorf("required %v", users.Required)
	}
	if _, ok := doc.Components.SecuritySchemes[contract.SecBearer]; !ok {
		t.Errorf("no bearer scheme: %v", doc.Components.SecuritySchemes)
	}
	login := doc.Paths.Value("/auth/login").Post
	ex, _ := json.Marshal(login.RequestBody.Value.Content["application/json"].Example)
	if strings.Contains(string(ex), "secret") || !strings.Contains(string(ex), "masked") {
		t.Errorf("login example not masked: %s", ex)
	}
	ex, _ = json.Marshal(login.Responses.Value("200").Value.Content["application/json"].Example)
	if strings.Contains(string(ex), "eyJ") {
		t.Errorf("token example not masked: %s", ex)
	}
	if c := login.Extensions[contract.CountExt]; c != 14 {
		t.Errorf("login samples %v, want 14", c)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
