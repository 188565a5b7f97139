package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"inspector/engine/session"
	"inspector/store"
)

func init() {
	register("frames", "show the HTTP/2 or HTTP/3 frames of a session, both legs", runFrames)
}

// framesPattern is the control API route for a session's frames; the composition root
// mounts framesHandler on it.
const framesPattern = "GET /api/v1/sessions/{id}/frames"

// framesHandler serves a session's frames as a JSON array.
func framesHandler(st *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, ok := pathID(w, r)
		if !ok {
			return
		}
		fs, err := st.Frames(session.ID(n))
		if errors.Is(err, store.ErrNotFound) {
			writeJSONError(w, http.StatusNotFound, err.Error())
			return
		}
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if fs == nil {
			fs = []session.Frame{}
		}
		writeJSON(w, fs)
	})
}

func runFrames(args []string) error {
	id, src, asJSON, err := openSessionCommand("frames", "one JSON object per frame", args)
	if err != nil {
		return err
	}
	defer src.Close()
	var frames []session.Frame
	switch {
	case src.st != nil:
		frames, err = src.st.Frames(id)
	case src.api != nil:
		err = src.api.do("GET", "/api/v1/sessions/"+strconv.FormatUint(uint64(id), 10)+"/frames", nil, &frames)
		var ce *controlError
		if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
			err = fmt.Errorf("session %d: %w", id, store.ErrNotFound)
		}
	default:
		err = fmt.Errorf("session %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, f := range frames {
			if err := enc.Encode(f); err != nil {
				return err
			}
		}
		return nil
	}
	if len(frames) == 0 {
		fmt.Fprintf(stdout, "session %d has no recorded frames (only HTTP/2 and HTTP/3 legs have frames, and only while frame capture is on)\n", id)
		return nil
	}
	writeFramesText(stdout, frames)
	return nil
}

// writeFramesText prints one line per frame (dir "in" is received by the proxy, "out" sent
// by it), times relative to the first, with decoded headers indented below their frame.
func writeFramesText(w io.Writer, frames []session.Frame) {
	t0 := frames[0].Time
	for _, f := range frames {
		fmt.Fprintf(w, "%10s  %-8s %-3s %-3s conn %-3d stream %-4d %-14s len %-6d", fmtOffset(f.Time.Sub(t0)), f.Leg, f.Dir, shortProto(f.Proto), f.ConnID, f.Stream, f.Type, f.Length)
		if f.Flags != "" {
			fmt.Fprintf(w, " [%s]", f.Flags)
		}
		if f.Detail != "" {
			fmt.Fprintf(w, " %s", f.Detail)
		}
		fmt.Fprintln(w)
		for _, h := range f.Headers {
			fmt.Fprintf(w, "%12s%s: %s\n", "", h.Name, h.Value)
		}
	}
}

func fmtOffset(d time.Duration) string {
	return fmt.Sprintf("+%.3fms", float64(d.Microseconds())/1000)
}
