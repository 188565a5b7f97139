// Command wclient is the Wine harness's Windows client: it sends GET requests to its
// arguments through the proxy in HTTP_PROXY, a moment apart, so the proxy can attribute its
// connection to this process (GetExtendedTcpTable) while it still runs.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}, Timeout: 30 * time.Second}
	for i, u := range os.Args[1:] {
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
