module inspector/bench

go 1.26.8

replace inspector => ../

require (
	appenv v0.0.0
	github.com/elazarl/goproxy v1.9.4
	github.com/google/martian/v3 v3.3.3
	github.com/quic-go/quic-go v0.65.0
	inspector v0.0.0-00010101000000-000000000000
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/bufbuild/protocompile v0.14.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/nftables v0.3.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/mdlayher/netlink v1.7.3-0.20250113171957-fbb4dce95f42 // indirect
	github.com/mdlayher/socket v0.5.0 // indirect
	github.com/quic-go/qpack v0.6.0 // indirect
	github.com/refraction-networking/utls v1.8.2 // indirect
	github.com/vektah/gqlparser/v2 v2.5.64 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace appenv => ../cmd/inspector/appenv
