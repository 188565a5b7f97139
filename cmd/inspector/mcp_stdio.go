package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainStdio is the stdio transport of `inspector mcp`. The SDK closes the connection
// when stdin ends, dropping the answers to calls it has read but not yet answered, so
// `printf 'initialize…\ntools/list…\n' | inspector mcp` answered only the first. Here
// the end of stdin is held back until every call read so far has been answered (or
// drainWait passed), then passed on.
type drainStdio struct {
	in  *bufio.Reader
	out io.Writer
	buf []byte

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]bool // ids of calls read and not answered
	expired bool
}

// drainWait bounds how long the end of stdin waits for the calls still running.
const drainWait = 2 * time.Minute

func newDrainStdio(in io.Reader, out io.Writer) *mcp.IOTransport {
	d := &drainStdio{in: bufio.NewReaderSize(in, 64<<10), out: out, pending: map[string]bool{}}
	d.cond = sync.NewCond(&d.mu)
	return &mcp.IOTransport{Reader: readerFunc(d.read), Writer: writerFunc(d.write)}
}

type jsonrpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (d *drainStdio) read(p []byte) (int, error) {
	if len(d.buf) == 0 {
		line, err := d.in.ReadBytes('\n')
		if len(line) > 0 {
			var h jsonrpcHead
			if json.Unmarshal(bytes.TrimSpace(line), &h) == nil && len(h.ID) > 0 && h.Method != "" {
				d.mu.Lock()
				d.pending[string(h.ID)] = true
				d.mu.Unlock()
			}
			d.buf = line
		} else if err != nil {
			if err == io.EOF {
				d.waitAnswered()
			}
			return 0, err
		}
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

func (d *drainStdio) waitAnswered() {
	t := time.AfterFunc(drainWait, func() {
		d.mu.Lock()
		d.expired = true
		d.mu.Unlock()
		d.cond.Broadcast()
	})
	defer t.Stop()
	d.mu.Lock()
	for len(d.pending) > 0 && !d.expired {
		d.cond.Wait()
	}
	d.mu.Unlock()
}

func (d *drainStdio) write(p []byte) (int, error) {
	n, err := d.out.Write(p)
	for _, line := range bytes.Split(p, []byte("\n")) {
		var h jsonrpcHead
		if json.Unmarshal(bytes.TrimSpace(line), &h) == nil && len(h.ID) > 0 && h.Method == "" {
			d.mu.Lock()
			delete(d.pending, string(h.ID))
			d.mu.Unlock()
			d.cond.Broadcast()
		}
	}
	return n, err
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
func (f readerFunc) Close() error               { return nil }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
func (f writerFunc) Close() error                { return nil }
