// Package replay sends stored requests again through the engine (engine.Engine.Send), so
// each result is an ordinary new session linked to its original (session.Session.ReplayOf).
// The composer, the control API's POST /api/v1/replay and `inspector replay` use it.
package replay

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"inspector/engine"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/session"
)

// Sender runs a request through the proxy pipeline; *engine.Engine implements it. It must
// be safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, req *http.Request, opts engine.SendOptions) (*session.Session, error)
}

// Edits are applied to every replayed request (method, URL, headers, body; see
// breakpoint.Edits, phase request).
type Edits = breakpoint.Edits

// MaxCount and MaxParallel bound a job.
const (
	MaxCount    = 10000
	MaxParallel = 64
)

// hopHeaders are not replayed: the transport sets its own.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Host"}

// Request builds the request of s again, with edits applied (nil: none). The stored body
// must be complete: a truncated capture is an error rather than a silently shorter request.
func Request(ctx context.Context, s *session.Session, e *Edits) (*http.Request, error) {
	if err := e.Validate(breakpoint.PhaseRequest); err != nil {
		return nil, err
	}
	method, rawURL := s.Request.Method, s.Request.URL
	h := s.Request.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	host := h.Get("Host")
	body := s.Request.Body.Data
	if e != nil {
		if e.Method != "" {
			method = e.Method
		}
		if e.URL != "" {
			rawURL = e.URL
		}
		if e.Header != nil {
			h = e.Header.Clone()
			host = h.Get("Host")
		}
	}
	nb, replaced, err := editsBody(e)
	if err != nil {
		return nil, err
	}
	if replaced {
		body = nb
	} else if s.Flags.Has(session.FlagReqTruncated) || s.Request.Body.Truncated {
		return nil, fmt.Errorf("session %d: the stored request body is truncated (%d of %d bytes); replay it with a new body", s.ID, len(s.Request.Body.Data), s.Request.Body.Size)
	}
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("session %d: cannot replay URL %q (need http or https)", s.ID, rawURL)
	}
	if method == "" {
		method = http.MethodGet
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("session %d: %w", s.ID, err)
	}
	if len(body) == 0 {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	}
	if len(body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	req.Header = h
	if host != "" && (e == nil || e.URL == "") {
		req.Host = host
	}
	return req, nil
}

func editsBody(e *Edits) ([]byte, bool, error) {
	switch {
	case e == nil:
		return nil, false, nil
	case e.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*e.BodyBase64)
		return b, true, err
	case e.Body != nil:
		return []byte(*e.Body), true, nil
	}
	return nil, false, nil
}

// Job is one replay: every session Count times (default 1), at most Parallel at once
// (default 1: sequential, in order).
type Job struct {
	Sessions []*session.Session
	Edits    *Edits
	Count    int
	Parallel int
	// Progress, when set, is called after each request with the number done and the
	// total; calls are serialized, on the goroutines of Run.
	Progress func(done, total int)
}

// Result is the outcome of one replayed request.
type Result struct {
	Original session.ID `json:"original"`
	ID       session.ID `json:"id,omitempty"` // the new session; 0 when none was recorded
	Status   int        `json:"status,omitempty"`
	Error    string     `json:"error,omitempty"`
}

// Validate checks the job's bounds and edits.
func (j *Job) Validate() error {
	if len(j.Sessions) == 0 {
		return errors.New("replay: no sessions")
	}
	if j.Count < 0 || j.Count > MaxCount {
		return fmt.Errorf("replay: count %d out of range 1–%d", j.Count, MaxCount)
	}
	if j.Parallel < 0 || j.Parallel > MaxParallel {
		return fmt.Errorf("replay: parallel %d out of range 1–%d", j.Parallel, MaxParallel)
	}
	return j.Edits.Validate(breakpoint.PhaseRequest)
}

// Run replays the job through snd and returns one Result per request, in job order
// (session by session, then iteration). A request that cannot be built fails the whole
// job before anything is sent. Cancelling ctx stops starting new requests and cancels the
// running ones; the results then hold what was done and err is ctx's error.
func Run(ctx context.Context, snd Sender, j Job) ([]Result, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	count, par := max(j.Count, 1), max(j.Parallel, 1)
	for _, s := range j.Sessions { // check every request before sending any
		if _, err := Request(ctx, s, j.Edits); err != nil {
			return nil, err
		}
	}
	total := len(j.Sessions) * count
	results := make([]Result, total)
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, par)
loop:
	for i := 0; i < total; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		if ctx.Err() != nil {
			<-sem
			break
		}
		s := j.Sessions[i/count]
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			r := Result{Original: s.ID}
			req, err := Request(ctx, s, j.Edits)
			if err == nil {
				var ns *session.Session
				ns, err = snd.Send(ctx, req, engine.SendOptions{ReplayOf: s.ID})
				if ns != nil {
					r.ID, r.Status = ns.ID, ns.Status()
					if ns.Error != nil && err == nil {
						r.Error = ns.Error.Message
					}
				}
			}
			if err != nil {
				r.Error = err.Error()
			}
			mu.Lock()
			results[i] = r
			done++
			if j.Progress != nil {
				j.Progress(done, total)
			}
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		out := results[:0:0]
		for _, r := range results {
			if r.Original != 0 {
				out = append(out, r)
			}
		}
		return out, err
	}
	return results, nil
}
