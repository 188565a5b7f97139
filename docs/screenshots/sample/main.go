// Command sample sends a varied set of requests through a running Inspector so that the
// screenshots show real data: JSON, gzip-encoded JSON, HTML, an image, a form POST,
// 404 and 500 responses, a failed upstream dial, over HTTP/1.1 and HTTP/2 with TLS.
//
//	go run ./docs/screenshots/sample -proxy 127.0.0.1:PORT -ca DATA_DIR/ca/root.pem
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
)

func main() {
	proxy := flag.String("proxy", "", "Inspector's proxy address")
	caFile := flag.String("ca", "", "Inspector's root CA (PEM)")
	flag.Parse()
	if *proxy == "" || *caFile == "" {
		fmt.Fprintln(os.Stderr, "usage: sample -proxy ADDR -ca FILE")
		os.Exit(2)
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)

	mux := http.NewServeMux()
	mux.HandleFunc("/api/users", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cr3t", Path: "/", HttpOnly: true})
		fmt.Fprint(w, `{"users":[{"id":1,"name":"Sample User","roles":["admin","dev"]},{"id":2,"name":"Second User","roles":["dev"]}],"total":2,"next":null}`)
	})
	mux.HandleFunc("/api/orders", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprint(zw, `{"orders":[`+strings.Repeat(`{"id":"A-1","items":3,"paid":true},`, 20)+`{"id":"Z-9","items":1,"paid":false}]}`)
		zw.Close()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Shop</title></head><body><h1>Welcome</h1><p>Hello from the sample origin.</p></body></html>")
	})
	mux.HandleFunc("/logo.png", func(w http.ResponseWriter, r *http.Request) {
		img := image.NewNRGBA(image.Rect(0, 0, 96, 96))
		for y := range 96 {
			for x := range 96 {
				img.Set(x, y, color.NRGBA{uint8(x * 2), uint8(y * 2), 200, 255})
			}
		}
		var b bytes.Buffer
		png.Encode(&b, img)
		w.Header().Set("Content-Type", "image/png")
		w.Write(b.Bytes())
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"user":%q}`, r.Form.Get("user"))
	})
	mux.HandleFunc("/download.bin", func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 512)
		for i := range b {
			b[i] = byte(i*37 + i/7)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/boom", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream database unavailable", http.StatusInternalServerError)
	})

	plain := httptest.NewServer(mux)
	defer plain.Close()
	secure := httptest.NewUnstartedServer(mux)
	secure.EnableHTTP2 = true
	secure.StartTLS()
	defer secure.Close()

	pu, _ := url.Parse("http://" + *proxy)
	h1 := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: roots}}}
	h2 := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}

	// The secure origin listens on 127.0.0.1; reach it as "localhost" so SNI is sent.
	sURL := strings.Replace(secure.URL, "127.0.0.1", "localhost", 1)
	// The origin's test certificate is self-signed: start Inspector with
	// --upstream-insecure localhost (take.sh does).
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()

	do := func(c *http.Client, method, u, body string) {
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		req.Header.Set("User-Agent", "inspector-sample/1.0")
		req.Header.Set("Accept", "*/*")
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if strings.Contains(u, "/api/users?") {
			req.Header.Set("Cookie", "theme=dark; cart_items=3; consent=analytics%2Cads")
		}
		resp, err := c.Do(req)
		if err != nil {
			fmt.Printf("%s %s: %v\n", method, u, err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %s: %d %s\n", method, u, resp.StatusCode, resp.Proto)
	}
	do(h1, "GET", plain.URL+"/", "")
	do(h1, "GET", plain.URL+"/api/users?page=1&sort=name", "")
	do(h1, "POST", plain.URL+"/login?next=%2Faccount&lang=en", "user=sample-user&password=not-a-real-secret&remember=on")
	do(h1, "GET", plain.URL+"/logo.png", "")
	do(h1, "GET", plain.URL+"/missing", "")
	do(h1, "GET", plain.URL+"/boom", "")
	do(h2, "GET", sURL+"/api/users", "")
	do(h2, "GET", sURL+"/api/orders", "")
	do(h2, "GET", sURL+"/logo.png", "")
	do(h2, "GET", sURL+"/download.bin", "")
	do(h1, "GET", "http://"+deadAddr+"/unreachable", "")
}
