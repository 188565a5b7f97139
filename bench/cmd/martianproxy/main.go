// Command martianproxy is the benchmark's martian peer: github.com/google/martian/v3 as a
// MITM proxy with its defaults (leaf per host cached, HTTP/2 to clients enabled for every
// host, an http.Transport with HTTP/2 towards origins), logging only errors. With -har it
// is a capturing peer: martian's HAR logger records every exchange with its bodies and is
// exported and reset every 2 s (what a tool built on martian keeps of the traffic).
package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/google/martian/v3"
	"github.com/google/martian/v3/h2"
	"github.com/google/martian/v3/har"
	mlog "github.com/google/martian/v3/log"
	"github.com/google/martian/v3/mitm"

	"inspector/bench/internal/peer"
)

func main() {
	c := peer.Parse("martianproxy")
	mlog.SetLevel(mlog.Silent)
	mc, err := mitm.NewConfig(c.CA.Leaf, c.CA.PrivateKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "martianproxy:", err)
		os.Exit(1)
	}
	mc.SetValidity(24 * time.Hour)
	mc.SetH2Config(&h2.Config{AllowedHostsFilter: func(string) bool { return true }, RootCAs: c.UpstreamCA})
	p := martian.NewProxy()
	p.SetMITM(mc)
	p.SetRoundTripper(&http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: c.UpstreamCA},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
	})
	if c.HAR {
		logger := har.NewLogger()
		logger.SetOption(har.BodyLogging(true))
		p.SetRequestModifier(logger)
		p.SetResponseModifier(logger)
		go func() {
			for range time.Tick(2 * time.Second) {
				logger.ExportAndReset()
			}
		}()
	}
	c.Ready()
	if err := p.Serve(c.Listener); err != nil {
		fmt.Fprintln(os.Stderr, "martianproxy:", err)
		os.Exit(1)
	}
}
