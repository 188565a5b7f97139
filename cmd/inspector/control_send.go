package main

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"inspector/engine"
)

// sendRequest is the body of POST /api/v1/send: a request composed by a script or an
// agent, sent through the engine like the window's composer (recorded as a session).
type sendRequest struct {
	Method string      `json:"method,omitempty"` // default GET
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
}

// send answers with the new session's summary.
func (d *debugAPI) send(w http.ResponseWriter, r *http.Request) {
	var in sendRequest
	if !readJSON(w, r, &in, false) {
		return
	}
	req, err := in.request()
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "send: "+err.Error())
		return
	}
	s, err := d.Send(r.Context(), req.WithContext(r.Context()), engine.SendOptions{})
	if s == nil {
		msg := "send failed"
		if err != nil {
			msg = "send: " + err.Error()
		}
		writeJSONError(w, http.StatusBadGateway, msg)
		return
	}
	writeJSON(w, s.Summarize())
}

func (in sendRequest) request() (*http.Request, error) {
	if in.Method == "" {
		in.Method = http.MethodGet
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("url must be an absolute http or https URL")
	}
	var body *strings.Reader
	if in.Body != "" {
		body = strings.NewReader(in.Body)
	}
	var req *http.Request
	if body != nil {
		req, err = http.NewRequest(in.Method, u.String(), body)
	} else {
		req, err = http.NewRequest(in.Method, u.String(), nil)
	}
	if err != nil {
		return nil, err
	}
	for k, vs := range in.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req, nil
}
