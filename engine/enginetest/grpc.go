package enginetest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"inspector/content"
	"inspector/rootca"
)

// GreeterProto is a small gRPC service for tests: a unary and a server-streaming method.
const GreeterProto = `syntax = "proto3";
package demo.v1;
message HelloRequest { string name = 1; int32 count = 2; }
message HelloReply { string message = 1; int32 seq = 2; }
service Greeter {
  rpc SayHello(HelloRequest) returns (HelloReply);
  rpc Stream(HelloRequest) returns (stream HelloReply);
}
`

// GreeterProtos loads GreeterProto as the instance's schemas would be.
func GreeterProtos(t testing.TB) *content.Protos {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greeter.proto"), []byte(GreeterProto), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := content.LoadProtos([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Greeter is a real gRPC service built from the .proto at run time (dynamicpb messages
// through grpc's proto codec), so the test needs no generated code.
type Greeter struct {
	Req, Reply protoreflect.MessageDescriptor
}

// ReplyMsg is a HelloReply.
func (g Greeter) ReplyMsg(text string, seq int32) *dynamicpb.Message {
	m := dynamicpb.NewMessage(g.Reply)
	m.Set(g.Reply.Fields().ByName("message"), protoreflect.ValueOfString(text))
	m.Set(g.Reply.Fields().ByName("seq"), protoreflect.ValueOfInt32(seq))
	return m
}

func (g Greeter) name(m *dynamicpb.Message) string {
	return m.Get(g.Req.Fields().ByName("name")).String()
}

// Desc is the service for grpc.Server.RegisterService.
func (g Greeter) Desc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "demo.v1.Greeter",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "SayHello", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := dynamicpb.NewMessage(g.Req)
			if err := dec(in); err != nil {
				return nil, err
			}
			if g.name(in) == "fail" {
				st, err := status.New(codes.InvalidArgument, "bad name: fail").WithDetails(protoadapt.MessageV1Of(wrapperspb.String("name")))
				if err != nil {
					return nil, err
				}
				return nil, st.Err()
			}
			return g.ReplyMsg("hello "+g.name(in), 1), nil
		}}},
		Streams: []grpc.StreamDesc{{StreamName: "Stream", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
			in := dynamicpb.NewMessage(g.Req)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			n := in.Get(g.Req.Fields().ByName("count")).Int()
			for i := int64(1); i <= n; i++ {
				if err := ss.SendMsg(g.ReplyMsg(fmt.Sprintf("%s #%d", g.name(in), i), int32(i))); err != nil {
					return err
				}
			}
			return nil
		}}},
	}
}

// StartGRPCOrigin serves the greeter over TLS (h2) with a certificate of its own CA,
// which the proxy is told to trust.
func StartGRPCOrigin(t testing.TB, g Greeter) (addr string, ca *rootca.CA) {
	t.Helper()
	ca, err := rootca.Load(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.LeafFor("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(leaf)))
	srv.RegisterService(g.Desc(), struct{}{})
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return ln.Addr().String(), ca
}

// GRPCThroughProxy dials the origin with a real gRPC client whose connection is a
// CONNECT tunnel through the proxy, TLS to the proxy's MITM certificate, h2 inside.
func GRPCThroughProxy(t testing.TB, p *Proxy, origin string) *grpc.ClientConn {
	t.Helper()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.Engine.Addr())
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 || br.Buffered() > 0 {
			c.Close()
			return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
		}
		return c, nil
	}
	cc, err := grpc.NewClient("passthrough:///"+origin, grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: p.CAPool(), ServerName: "127.0.0.1"})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}
