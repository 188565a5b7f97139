package main

import (
	"net/http"

	"inspector/engine/netprofile"
)

// startNetProfile makes the network-condition shaper (engine/netprofile) with the
// --network-profile flag's profile ("" or none: off).
func startNetProfile(flagValue string) (*netprofile.Shaper, error) {
	p, err := netprofile.Parse(flagValue)
	if err != nil {
		return nil, usagef("--network-profile: %v", err)
	}
	s, err := netprofile.New(p)
	if err != nil {
		return nil, usagef("--network-profile: %v", err)
	}
	return s, nil
}

// networkProfileBody is GET /api/v1/network-profile's answer and PUT's body: either a
// profile given in full, or a "spec" as --network-profile takes it ("3G", "none",
// "bw:2000,latency:80").
type networkProfileBody struct {
	Profile *netprofile.Profile  `json:"profile"` // null: none
	Spec    string               `json:"spec,omitempty"`
	Presets []netprofile.Profile `json:"presets,omitempty"`
}

// netProfileHandlers serve
//
//	GET /api/v1/network-profile   {"profile": {…}|null, "presets": […]}
//	PUT /api/v1/network-profile   {"spec": "3G"} or {"profile": {…}} → the GET document
func netProfileHandlers(s *netprofile.Shaper) map[string]http.Handler {
	get := func(w http.ResponseWriter) {
		writeJSON(w, networkProfileBody{Profile: s.Profile(), Presets: netprofile.Presets})
	}
	return map[string]http.Handler{
		"GET /api/v1/network-profile": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { get(w) }),
		"PUT /api/v1/network-profile": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in networkProfileBody
			if !readJSON(w, r, &in, false) {
				return
			}
			p := in.Profile
			if in.Spec != "" {
				var err error
				if p, err = netprofile.Parse(in.Spec); err != nil {
					writeJSONError(w, http.StatusBadRequest, err.Error())
					return
				}
			}
			if p != nil && p.Name == "" {
				p.Name = p.String()
			}
			if err := s.Set(p); err != nil {
				writeJSONError(w, http.StatusBadRequest, err.Error())
				return
			}
			get(w)
		}),
	}
}
