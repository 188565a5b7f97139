package contract_test

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"path/filepath"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"inspector/contract"
	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/rootca"
)

const shopProto = `syntax = "proto3";
package shop.v1;
enum Status { UNKNOWN = 0; PAID = 1; SHIPPED = 2; }
message Item { string sku = 1; int32 qty = 2; double price = 3; }
message Address { string city = 1; string zip = 2; }
message Customer { string name = 1; string email = 2; Address address = 3; }
message Order {
  string id = 1; repeated Item items = 2; Status status = 3; bytes receipt = 4;
  int64 placed = 5; repeated string tags = 6; Customer customer = 7; float discount = 8;
  repeated int32 codes = 9;
}
message GetOrderRequest { string id = 1; bool with_items = 2; }
message ListOrdersRequest { int32 limit = 1; string cursor = 2; }
service Orders {
  rpc GetOrder(GetOrderRequest) returns (Order);
  rpc ListOrders(ListOrdersRequest) returns (stream Order);
}
`

func compileProto(t *testing.T, files map[string]string, name string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files)})}
	fds, err := c.Compile(context.Background(), name)
	if err != nil {
		t.Fatalf("compile %s: %v\n%s", name, err, files[name])
	}
	return fds[0]
}

func randomOrder(r *rand.Rand, md protoreflect.MessageDescriptor) *dynamicpb.Message {
	items := ""
	for i := 0; i < 1+r.Intn(3); i++ {
		if i > 0 {
			items += ","
		}
		items += fmt.Sprintf(`{"sku":"sku-%d","qty":%d,"price":%d.%02d}`, r.Intn(999), 1+r.Intn(9), r.Intn(100), 1+r.Intn(98))
	}
	js := fmt.Sprintf(`{"id":"o-%d","items":[%s],"status":%q,"receipt":"%s","placed":%d,"tags":["a","b%d"],
		"customer":{"name":"Ann %d","email":"a%d@example.com","address":{"city":"Town","zip":"%05d"}},
		"discount":%d.5,"codes":[%d,%d,300]}`,
		r.Intn(1e6), items, []string{"PAID", "SHIPPED"}[r.Intn(2)], "/w8AAQL+", 1700000000000+r.Int63n(1e9), r.Intn(9),
		r.Intn(99), r.Intn(99), r.Intn(99999), r.Intn(50), r.Intn(100), r.Intn(100))
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		panic(err)
	}
	return m
}

// startShop serves the Orders service over TLS h2 with a certificate of its own CA.
func startShop(t *testing.T, fd protoreflect.FileDescriptor) (string, *rootca.CA) {
	ca, err := rootca.Load(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.LeafFor("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	msgs := fd.Messages()
	order := msgs.ByName("Order")
	getReq, listReq := msgs.ByName("GetOrderRequest"), msgs.ByName("ListOrdersRequest")
	r := rand.New(rand.NewSource(3))
	desc := &grpc.ServiceDesc{ServiceName: "shop.v1.Orders", HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "GetOrder", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := dynamicpb.NewMessage(getReq)
			if err := dec(in); err != nil {
				return nil, err
			}
			return randomOrder(r, order), nil
		}}},
		Streams: []grpc.StreamDesc{{StreamName: "ListOrders", ServerStreams: true, Handler: func(_ any, ss grpc.ServerStream) error {
			in := dynamicpb.NewMessage(listReq)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			for i := int64(0); i < in.Get(listReq.Fields().ByName("limit")).Int(); i++ {
				if err := ss.SendMsg(randomOrder(r, order)); err != nil {
					return err
				}
			}
			return nil
		}}},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(leaf)))
	srv.RegisterService(desc, struct{}{})
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return ln.Addr().String(), ca
}

// fieldNumbers lists the field numbers set in m, nested messages included, as paths.
func fieldNumbers(m protoreflect.Message, prefix string, out map[string]bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := fmt.Sprintf("%s%d", prefix, fd.Number())
		out[p] = true
		if fd.Kind() == protoreflect.MessageKind {
			if fd.IsList() {
				for i := 0; i < v.List().Len(); i++ {
					fieldNumbers(v.List().Get(i).Message(), p+".", out)
				}
			} else {
				fieldNumbers(v.Message(), p+".", out)
			}
		}
		return true
	})
}

func TestInferProtoFromGRPC(t *testing.T) {
	t.Parallel()
	truth := compileProto(t, map[string]string{"shop.proto": shopProto}, "shop.proto")
	origin, originCA := startShop(t, truth)
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots.AddCert(originCA.Cert()) })
	cc := et.GRPCThroughProxy(t, p, origin)
	ctx := context.Background()
	msgs := truth.Messages()
	var sessions []*session.Session
	for i := 0; i < 12; i++ {
		req := dynamicpb.NewMessage(msgs.ByName("GetOrderRequest"))
		req.Set(msgs.ByName("GetOrderRequest").Fields().ByName("id"), protoreflect.ValueOfString(fmt.Sprintf("o-%d", i)))
		req.Set(msgs.ByName("GetOrderRequest").Fields().ByName("with_items"), protoreflect.ValueOfBool(true))
		if err := cc.Invoke(ctx, "/shop.v1.Orders/GetOrder", req, dynamicpb.NewMessage(msgs.ByName("Order"))); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, p.Next(t))
	}
	for i := 0; i < 3; i++ {
		st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/shop.v1.Orders/ListOrders")
		if err != nil {
			t.Fatal(err)
		}
		req := dynamicpb.NewMessage(msgs.ByName("ListOrdersRequest"))
		req.Set(msgs.ByName("ListOrdersRequest").Fields().ByName("limit"), protoreflect.ValueOfInt32(4))
		req.Set(msgs.ByName("ListOrdersRequest").Fields().ByName("cursor"), protoreflect.ValueOfString("c"))
		if err := st.SendMsg(req); err != nil {
			t.Fatal(err)
		}
		st.CloseSend()
		for {
			if err := st.RecvMsg(dynamicpb.NewMessage(msgs.ByName("Order"))); err != nil {
				break
			}
		}
		sessions = append(sessions, p.Next(t))
	}

	in := contract.NewProtoInferrer()
	for _, s := range sessions {
		in.Add(s)
	}
	files := in.ProtoFiles()
	src, ok := files["shop/v1/inferred.proto"]
	if !ok {
		t.Fatalf("files %v", files)
	}
	t.Logf("inferred:\n%s", src)
	inferred := compileProto(t, files, "shop/v1/inferred.proto")
	svc := inferred.Services().ByName("Orders")
	if svc == nil || svc.Methods().ByName("GetOrder") == nil || !svc.Methods().ByName("ListOrders").IsStreamingServer() {
		t.Fatalf("service not recovered")
	}

	// Every sample message decodes with the inferred types, with no unknown fields and the
	// same field numbers as with the true schema.
	total, ok2 := 0, 0
	for _, s := range sessions {
		method := svc.Methods().ByName(protoreflect.Name(lastSeg(s.Request.URL)))
		for _, leg := range []struct {
			body  []byte
			truth protoreflect.MessageDescriptor
			inf   protoreflect.MessageDescriptor
		}{
			{s.Request.Body.Data, truthInput(truth, s), method.Input()},
			{s.Response.Body.Data, msgs.ByName("Order"), method.Output()},
		} {
			for _, frame := range grpcFrames(leg.body) {
				total++
				want, got := dynamicpb.NewMessage(leg.truth), dynamicpb.NewMessage(leg.inf)
				if err := proto.Unmarshal(frame, want); err != nil {
					t.Fatal(err)
				}
				if err := proto.Unmarshal(frame, got); err != nil {
					t.Errorf("inferred type does not decode: %v", err)
					continue
				}
				if len(got.GetUnknown()) > 0 {
					t.Errorf("unknown fields with the inferred type: %x", got.GetUnknown())
					continue
				}
				wn, gn := map[string]bool{}, map[string]bool{}
				fieldNumbers(want, "", wn)
				fieldNumbers(got, "", gn)
				if fmt.Sprint(sorted(wn)) != fmt.Sprint(sorted(gn)) {
					t.Errorf("field numbers %v, want %v", sorted(gn), sorted(wn))
					continue
				}
				ok2++
			}
		}
	}
	t.Logf("decoded %d of %d sample messages with the right field numbers", ok2, total)
	if total < 30 || ok2 != total {
		t.Fatalf("decoded %d of %d", ok2, total)
	}
	// Strings told apart from bytes, nested and repeated messages found.
	order := svc.Methods().ByName("GetOrder").Output()
	for num, want := range map[protoreflect.FieldNumber]string{1: "string", 2: "repeated message", 4: "bytes", 6: "repeated string", 7: "message", 8: "float"} {
		f := order.Fields().ByNumber(num)
		got := f.Kind().String()
		if f.IsList() {
			got = "repeated " + got
		}
		if got != want {
			t.Errorf("Order field %d: %s, want %s", num, got, want)
		}
	}
}

func truthInput(fd protoreflect.FileDescriptor, s *session.Session) protoreflect.MessageDescriptor {
	return fd.Services().ByName("Orders").Methods().ByName(protoreflect.Name(lastSeg(s.Request.URL))).Input()
}

func lastSeg(u string) string {
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] == '/' {
			return u[i+1:]
		}
	}
	return u
}

func grpcFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 5 {
		n := int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4])
		if len(b) < 5+n {
			break
		}
		out = append(out, b[5:5+n])
		b = b[5+n:]
	}
	return out
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
