// Command wclient is the Wine harness's Windows client: `wclient PROXY URL…` sends GET
// requests to the URLs through the proxy at PROXY (host:port), a moment apart, so the proxy
// can attribute the connection to this process (GetExtendedTcpTable) while it still runs.
// The proxy is given explicitly: Go's HTTP_PROXY handling skips loopback targets.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: wclient PROXY URL…")
		os.Exit(2)
	}
	proxy := &url.URL{Scheme: "http", Host: os.Args[1]}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 30 * time.Second}
	for i, u := range os.Args[2:] {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		resp, err := c.Get(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wclient:", err)
			os.Exit(1)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
}
