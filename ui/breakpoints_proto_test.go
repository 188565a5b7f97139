package ui

import (
	"context"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"inspector/content"
	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
)

// A paused gRPC request is edited as JSON in the breakpoint window: a real grpc-go client
// and server through a real engine, a request breakpoint on the method, the editor shows
// the message as JSON by the .proto; JSON the schema refuses is an error and the session
// stays paused; an edited field is re-encoded (gRPC length prefix, flag 0) and the server
// receives the edited value (its reply echoes it).
func TestBreakpointEditsGRPCMessageAsJSON(t *testing.T) {
	protos := et.GreeterProtos(t)
	m, _ := protos.Method("/demo.v1.Greeter/SayHello")
	g := et.Greeter{Req: m.Input(), Reply: m.Output()}
	origin, originCA := et.StartGRPCOrigin(t, g)
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots.AddCert(originCA.Cert()) })
	r := newDebugRigOn(t, p, func() *content.Protos { return protos })
	bm := r.m
	if _, err := bm.Add(breakpoint.Breakpoint{Filter: "path:/demo.v1.Greeter/SayHello", Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		t.Fatal(err)
	}

	cc := et.GRPCThroughProxy(t, p, origin)
	type result struct {
		reply string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		in := dynamicpb.NewMessage(g.Req)
		in.Set(g.Req.Fields().ByName("name"), protoreflect.ValueOfString("ann"))
		out := dynamicpb.NewMessage(g.Reply)
		err := cc.Invoke(context.Background(), "/demo.v1.Greeter/SayHello", in, out)
		done <- result{out.Get(g.Reply.Fields().ByName("message")).String(), err}
	}()
	r.paused(1)
	ed := r.u.debug.bp.Editor
	if ed.proto == nil || !strings.Contains(ed.Body.Text, `"name"`) || !strings.Contains(ed.Body.Text, `"ann"`) {
		t.Fatalf("paused gRPC body not shown as JSON: %q (info %q)", ed.Body.Text, ed.Info.Text)
	}
	if !strings.Contains(ed.Info.Text, "demo.v1.HelloRequest") {
		t.Fatalf("info %q does not name the message type", ed.Info.Text)
	}
	// JSON the schema refuses: a clear error, and the session stays paused.
	ed.Body.SetText(`{"nope": 1}`)
	test.Tap(ed.ContinueEdited)
	if !strings.Contains(ed.Err.Text, "not a demo.v1.HelloRequest") || len(bm.List()) != 1 {
		t.Fatalf("bad JSON: error %q, %d paused", ed.Err.Text, len(bm.List()))
	}
	ed.Body.SetText(`{"name": "edited in the window", "count": 2}`)
	test.Tap(ed.ContinueEdited)
	got := <-done
	if got.err != nil || got.reply != "hello edited in the window" {
		t.Fatalf("reply %q, err %v: the server did not receive the edited message", got.reply, got.err)
	}
	r.paused(0)
}

// The protobuf body's JSON form: several framed messages are one JSON array, encoded
// back with a 5-byte prefix each; a plain protobuf body refuses an array; a body of
// another type, a method without a schema or a cut body is left as it is.
func TestProtoBodyFramesAndRefusals(t *testing.T) {
	protos := et.GreeterProtos(t)
	m, _ := protos.Method("/demo.v1.Greeter/SayHello")
	enc := func(name string) []byte {
		b, err := protos.EncodeJSON(m.Input(), `{"name":"`+name+`"}`)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	frame := func(b []byte) []byte { return append([]byte{0, 0, 0, 0, byte(len(b))}, b...) }
	body := append(frame(enc("a")), frame(enc("b"))...)
	hdr := func(ct string) map[string][]string { return map[string][]string{"Content-Type": {ct}} }
	p := breakpoint.Paused{Phase: breakpoint.PhaseRequest, URL: "https://h.example/demo.v1.Greeter/SayHello", Header: hdr("application/grpc"), Body: body}
	pb := newProtoBody(protos, p)
	if pb == nil || !strings.HasPrefix(pb.text, "[") || !strings.Contains(pb.text, `"a"`) || !strings.Contains(pb.text, `"b"`) {
		t.Fatalf("two framed messages: %+v", pb)
	}
	wire, err := pb.encode(pb.text)
	if err != nil || string(wire) != string(body) {
		t.Fatalf("round trip: %x, %v; want %x", wire, err, body)
	}
	if _, err := pb.encode(`[{"name":"a"}, {"bad": 1}]`); err == nil || !strings.Contains(err.Error(), "message 2") {
		t.Fatalf("bad second message: %v", err)
	}
	plain := p
	plain.Header, plain.Body = hdr("application/x-protobuf"), enc("solo")
	if pb := newProtoBody(protos, plain); pb == nil || !strings.Contains(pb.text, "solo") {
		t.Fatalf("plain protobuf: %+v", pb)
	} else if _, err := pb.encode(`[{"name":"x"}]`); err == nil {
		t.Fatal("a plain protobuf body accepted an array")
	}
	for name, q := range map[string]breakpoint.Paused{
		"json":      {Phase: p.Phase, URL: p.URL, Header: hdr("application/json"), Body: []byte(`{}`)},
		"no schema": {Phase: p.Phase, URL: "https://h.example/other.Svc/M", Header: p.Header, Body: body},
		"cut":       {Phase: p.Phase, URL: p.URL, Header: p.Header, Body: body, BodyTruncated: true},
		"bad frame": {Phase: p.Phase, URL: p.URL, Header: p.Header, Body: []byte{9, 9}},
	} {
		if pb := newProtoBody(protos, q); pb != nil {
			t.Errorf("%s: edited as JSON: %q", name, pb.text)
		}
	}
	if newProtoBody(nil, p) != nil {
		t.Error("no schemas: edited as JSON")
	}
}

// A paused gRPC response is edited as JSON too: the client receives the edited reply
// message, and the trailers (grpc-status OK) still follow it.
func TestBreakpointEditsGRPCReplyAsJSON(t *testing.T) {
	protos := et.GreeterProtos(t)
	m, _ := protos.Method("/demo.v1.Greeter/SayHello")
	g := et.Greeter{Req: m.Input(), Reply: m.Output()}
	origin, originCA := et.StartGRPCOrigin(t, g)
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots.AddCert(originCA.Cert()) })
	r := newDebugRigOn(t, p, func() *content.Protos { return protos })
	if _, err := r.m.Add(breakpoint.Breakpoint{Filter: "path:/demo.v1.Greeter/SayHello", Phase: breakpoint.PhaseResponse, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	cc := et.GRPCThroughProxy(t, p, origin)
	type result struct {
		reply string
		seq   int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		in := dynamicpb.NewMessage(g.Req)
		in.Set(g.Req.Fields().ByName("name"), protoreflect.ValueOfString("bob"))
		out := dynamicpb.NewMessage(g.Reply)
		err := cc.Invoke(context.Background(), "/demo.v1.Greeter/SayHello", in, out)
		done <- result{out.Get(g.Reply.Fields().ByName("message")).String(), out.Get(g.Reply.Fields().ByName("seq")).Int(), err}
	}()
	r.paused(1)
	ed := r.u.debug.bp.Editor
	if ed.proto == nil || !strings.Contains(ed.Body.Text, `"hello bob"`) || !strings.Contains(ed.Info.Text, "demo.v1.HelloReply") {
		t.Fatalf("paused reply not shown as JSON: %q (info %q)", ed.Body.Text, ed.Info.Text)
	}
	ed.Body.SetText(`{"message": "rewritten reply", "seq": 7}`)
	test.Tap(ed.ContinueEdited)
	got := <-done
	if got.err != nil || got.reply != "rewritten reply" || got.seq != 7 {
		t.Fatalf("client got %q seq %d, err %v", got.reply, got.seq, got.err)
	}
	r.paused(0)
}
