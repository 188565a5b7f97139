//go:build tools

// Package tools pins the modules the packages of this repository are built on,
// so go mod tidy keeps them while those packages grow.
package tools

import (
	_ "fyne.io/fyne/v2/app"
	_ "github.com/google/martian/v3"
	_ "github.com/quic-go/quic-go/http3"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/net/http2"
	_ "golang.org/x/sync/singleflight"
	_ "golang.org/x/sys/windows"
)
