package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"inspector/content"
	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/filter"
)

func viewByName(vs []content.View, name string) *content.View {
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}

// A real gRPC client and server through the proxy over h2: unary (plain and gzip), an
// error with status details, and a server stream; each decodes without a schema (fields
// by number) and with the .proto (names, via protojson), with status from the trailers.
func TestGRPCThroughProxyDecodes(t *testing.T) {
	protos := et.GreeterProtos(t)
	m, _ := protos.Method("/demo.v1.Greeter/SayHello")
	g := et.Greeter{Req: m.Input(), Reply: m.Output()}
	origin, originCA := et.StartGRPCOrigin(t, g)
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots.AddCert(originCA.Cert()) })
	cc := et.GRPCThroughProxy(t, p, origin)
	ctx := context.Background()

	req := func(name string, count int32) *dynamicpb.Message {
		r := dynamicpb.NewMessage(g.Req)
		r.Set(g.Req.Fields().ByName("name"), protoreflect.ValueOfString(name))
		r.Set(g.Req.Fields().ByName("count"), protoreflect.ValueOfInt32(count))
		return r
	}
	reply := dynamicpb.NewMessage(g.Reply)
	if err := cc.Invoke(ctx, "/demo.v1.Greeter/SayHello", req("ann", 0), reply); err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(g.Reply.Fields().ByName("message")).String(); got != "hello ann" {
		t.Fatalf("reply %q", got)
	}
	unary := p.Next(t)
	if err := cc.Invoke(ctx, "/demo.v1.Greeter/SayHello", req("zip", 0), dynamicpb.NewMessage(g.Reply), grpc.UseCompressor(gzip.Name)); err != nil {
		t.Fatal(err)
	}
	zipped := p.Next(t)
	err := cc.Invoke(ctx, "/demo.v1.Greeter/SayHello", req("fail", 0), dynamicpb.NewMessage(g.Reply))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("fail call: %v", err)
	}
	failed := p.Next(t)
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/demo.v1.Greeter/Stream")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(req("bob", 3)); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	n := 0
	for {
		if err := st.RecvMsg(dynamicpb.NewMessage(g.Reply)); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d stream messages", n)
	}
	stream := p.Next(t)

	for _, s := range []*session.Session{unary, zipped, failed, stream} {
		if s.Client.Proto != session.HTTP2 || s.Upstream.Proto != session.HTTP2 {
			t.Errorf("#%d protos %s/%s, want h2 on both legs", s.ID, s.Client.Proto, s.Upstream.Proto)
		}
	}
	// Without a schema.
	reqV, respV := content.SessionViews(unary, content.Options{})
	if v := viewByName(reqV, "Messages"); v == nil || !strings.Contains(v.Text, `1: "ann"`) || !strings.Contains(v.Note, "no schema") {
		t.Errorf("unary request, schemaless: %+v", reqV)
	}
	if v := viewByName(respV, "Messages"); v == nil || !strings.Contains(v.Text, `1: "hello ann"`) {
		t.Errorf("unary response, schemaless: %+v", respV)
	}
	if v := viewByName(respV, "Status"); v == nil || !strings.Contains(v.Text, "grpc-status: 0 OK") {
		t.Errorf("unary status: %+v", respV)
	}
	// With the .proto.
	opts := content.Options{Protos: protos}
	reqV, respV = content.SessionViews(unary, opts)
	if v := viewByName(reqV, "Messages"); v == nil || !strings.Contains(v.Text, `"name":`) || !strings.Contains(v.Note, "demo.v1.HelloRequest") {
		t.Errorf("unary request, schema: %+v", reqV)
	}
	if v := viewByName(respV, "Messages"); v == nil || !strings.Contains(v.Text, `"message":`) || !strings.Contains(v.Text, `"hello ann"`) {
		t.Errorf("unary response, schema: %+v", respV)
	}
	// grpc-encoding gzip: the compressed flag is honoured.
	if zipped.Request.Header.Get("Grpc-Encoding") != "gzip" {
		t.Fatalf("gzip call sent grpc-encoding %q", zipped.Request.Header.Get("Grpc-Encoding"))
	}
	reqV, _ = content.SessionViews(zipped, opts)
	if v := viewByName(reqV, "Messages"); v == nil || !strings.Contains(v.Text, `"zip"`) || !strings.Contains(v.Text, "gzip") {
		t.Errorf("gzip request: %+v", reqV)
	}
	// Error with details (trailers-only or trailers).
	_, respV = content.SessionViews(failed, opts)
	if v := viewByName(respV, "Status"); v == nil || !strings.Contains(v.Text, "3 INVALID_ARGUMENT") || !strings.Contains(v.Text, "bad name: fail") ||
		!strings.Contains(v.Text, "type.googleapis.com/google.protobuf.StringValue: \"name\"") {
		t.Errorf("error status: %+v", respV)
	}
	// Server stream: three messages listed one by one.
	_, respV = content.SessionViews(stream, opts)
	v := viewByName(respV, "Messages")
	if v == nil || !strings.Contains(v.Note, "3 messages") || !strings.Contains(v.Text, `"bob #1"`) || !strings.Contains(v.Text, `"bob #3"`) || !strings.Contains(v.Text, "#3 (") {
		t.Errorf("stream: %+v", respV)
	}
	// Filters.
	for expr, want := range map[string][]*session.Session{
		"grpc:demo.v1.Greeter/SayHello": {unary, zipped, failed}, "grpc:*/Stream": {stream}, "grpc:other/*": nil,
	} {
		e := filter.MustParse(expr)
		for _, s := range []*session.Session{unary, zipped, failed, stream} {
			in := false
			for _, w := range want {
				in = in || w == s
			}
			if e.Match(s) != in {
				t.Errorf("%s on #%d: %v", expr, s.ID, !in)
			}
		}
	}
}

func lpFrame(flag byte, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flag
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// A Connect (unary and streaming) and a gRPC-Web (binary and text) exchange through the
// proxy, with origins that speak each protocol's framing.
func TestConnectAndGRPCWebThroughProxy(t *testing.T) {
	protos := et.GreeterProtos(t)
	m, _ := protos.Method("/demo.v1.Greeter/SayHello")
	g := et.Greeter{Req: m.Input(), Reply: m.Output()}
	wire := func(text string) []byte {
		b, err := protos.EncodeJSON(g.Reply, `{"message":"`+text+`","seq":1}`)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch ct := r.Header.Get("Content-Type"); ct {
		case "application/proto": // Connect unary
			w.Header().Set("Content-Type", "application/proto")
			w.Write(wire("connect unary"))
		case "application/connect+proto": // Connect server stream
			w.Header().Set("Content-Type", "application/connect+proto")
			w.Write(lpFrame(0, wire("connect stream 1")))
			w.Write(lpFrame(0, wire("connect stream 2")))
			w.Write(lpFrame(2, []byte(`{"error":{"code":"resource_exhausted","message":"quota"}}`)))
		case "application/grpc-web+proto":
			w.Header().Set("Content-Type", "application/grpc-web+proto")
			w.Write(lpFrame(0, wire("web binary")))
			w.Write(lpFrame(0x80, []byte("grpc-status: 0\r\ngrpc-message: fine\r\n")))
		case "application/grpc-web-text":
			w.Header().Set("Content-Type", "application/grpc-web-text")
			w.Write([]byte(base64.StdEncoding.EncodeToString(lpFrame(0, wire("web text")))))
			w.Write([]byte(base64.StdEncoding.EncodeToString(lpFrame(0x80, []byte("grpc-status: 14\r\n")))))
		default:
			http.Error(w, "unexpected "+ct, 415)
		}
	}))
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH2)
	reqMsg, _ := protos.EncodeJSON(g.Req, `{"name":"eve"}`)
	call := func(method, ct string, body []byte, hdr ...string) *session.Session {
		t.Helper()
		r, _ := http.NewRequest("POST", o.URL+"/demo.v1.Greeter/"+method, bytes.NewReader(body))
		r.Header.Set("Content-Type", ct)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %s", method, ct, resp.Status)
		}
		return p.Next(t)
	}
	opts := content.Options{Protos: protos}

	s := call("SayHello", "application/proto", reqMsg, "Connect-Protocol-Version", "1")
	reqV, respV := content.SessionViews(s, opts)
	if reqV[0].Name != "Protobuf" || !strings.Contains(reqV[0].Text, `"eve"`) || !strings.Contains(respV[0].Text, `"connect unary"`) {
		t.Errorf("connect unary: %+v / %+v", reqV, respV)
	}
	if op := content.Operation(s); op != "demo.v1.Greeter/SayHello" {
		t.Errorf("connect unary operation %q", op)
	}
	s = call("Stream", "application/connect+proto", lpFrame(0, reqMsg))
	_, respV = content.SessionViews(s, opts)
	if v := viewByName(respV, "Messages"); v == nil || !strings.Contains(v.Text, `"connect stream 2"`) || !strings.Contains(v.Note, "2 messages") {
		t.Errorf("connect stream: %+v", respV)
	}
	if v := viewByName(respV, "End of stream"); v == nil || v.Note != "error resource_exhausted: quota" {
		t.Errorf("connect end: %+v", respV)
	}
	s = call("SayHello", "application/grpc-web+proto", lpFrame(0, reqMsg))
	reqV, respV = content.SessionViews(s, opts)
	if v := viewByName(reqV, "Messages"); v == nil || !strings.Contains(v.Text, `"eve"`) {
		t.Errorf("grpc-web request: %+v", reqV)
	}
	if v := viewByName(respV, "Status"); v == nil || !strings.Contains(v.Text, "0 OK") || !strings.Contains(v.Text, "fine") {
		t.Errorf("grpc-web status: %+v", respV)
	}
	s = call("SayHello", "application/grpc-web-text", []byte(base64.StdEncoding.EncodeToString(lpFrame(0, reqMsg))))
	reqV, respV = content.SessionViews(s, opts)
	if v := viewByName(respV, "Messages"); v == nil || !strings.Contains(v.Text, `"web text"`) || !strings.Contains(viewByName(reqV, "Messages").Text, `"eve"`) {
		t.Errorf("grpc-web-text: %+v", respV)
	}
	if v := viewByName(respV, "Status"); v == nil || !strings.Contains(v.Text, "14 UNAVAILABLE") {
		t.Errorf("grpc-web-text status: %+v", respV)
	}
}
