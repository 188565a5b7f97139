package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"inspector/content"
	"inspector/engine/session"
	"inspector/store"
)

// The running instance's protobuf schemas: `inspector --proto-path DIR[,DIR]` (or
// INSPECTOR_PROTO_PATH), loaded on first use; the control API (`/api/v1/protos`) and the
// window (Capture ▸ Protobuf schemas…) replace them while it runs. The control API's content
// route and the window read them through instanceProtos.
var (
	instanceProtoPath  []string
	instanceProtosOnce sync.Once
	instanceProtosMu   sync.Mutex
	instanceProtosVal  *content.Protos
	instanceProtosErr  error
	// startProtoPath is what --proto-path or INSPECTOR_PROTO_PATH named at start: folders
	// the user chose, which PUT /api/v1/protos may name again.
	startProtoPath []string
)

// protoPathFlag registers --proto-path on the instance's flag set (repeatable; commas or
// the OS list separator split folders).
func protoPathFlag(fs *flag.FlagSet) {
	fs.Func("proto-path", "folders (DIR[,DIR]) of .proto files or descriptor sets naming protobuf and gRPC messages (default $INSPECTOR_PROTO_PATH)", func(v string) error {
		dirs := splitPathList(v)
		if len(dirs) == 0 {
			return errors.New("needs a folder")
		}
		instanceProtoPath = append(instanceProtoPath, dirs...)
		return nil
	})
}

// instanceProtos loads the instance's schemas on first use; files that fail are
// reported on stderr and the rest still load. Nil when no path was given.
func instanceProtos() *content.Protos {
	instanceProtosOnce.Do(func() {
		dirs := instanceProtoPath
		if len(dirs) == 0 {
			dirs = splitPathList(os.Getenv("INSPECTOR_PROTO_PATH"))
		}
		if len(dirs) == 0 {
			return
		}
		instanceProtosMu.Lock()
		startProtoPath = append([]string(nil), dirs...)
		instanceProtosMu.Unlock()
		if _, err := setInstanceProtoPath(dirs); err != nil {
			fmt.Fprintf(stderr, "inspector: --proto-path: %v\n", err)
		}
	})
	instanceProtosMu.Lock()
	defer instanceProtosMu.Unlock()
	return instanceProtosVal
}

// setInstanceProtoPath loads dirs (none: no schemas) and makes them the instance's
// schemas. Files that fail are in the error; the others still load and are used.
func setInstanceProtoPath(dirs []string) (*content.Protos, error) {
	var p *content.Protos
	var err error
	if len(dirs) > 0 {
		p, err = content.LoadProtos(dirs)
	}
	instanceProtosMu.Lock()
	defer instanceProtosMu.Unlock()
	instanceProtoPath, instanceProtosVal, instanceProtosErr = append([]string(nil), dirs...), p, err
	return p, err
}

// protoState is GET /api/v1/protos's answer and the window's view of the schemas.
type protoState struct {
	Paths []string `json:"paths"`
	Files []string `json:"files"`
	Error string   `json:"error,omitempty"`
}

func currentProtoState() protoState {
	instanceProtos() // the flag's schemas, once
	instanceProtosMu.Lock()
	defer instanceProtosMu.Unlock()
	st := protoState{Paths: append([]string{}, instanceProtoPath...), Files: []string{}}
	if instanceProtosVal != nil {
		st.Files = instanceProtosVal.Files()
	}
	if instanceProtosErr != nil {
		st.Error = instanceProtosErr.Error()
	}
	return st
}

// protoPathAllowed says whether PUT /api/v1/protos may load p: like map_local's files, a
// schema path must be under a folder the user chose (the --proto-path folders given at
// start, or a map-local folder allowed in the window or with `inspector rules
// allow-folder`), after resolving symlinks, and never in the data directory nor a folder
// holding it. The control API (and whatever drives it: an MCP client, a page that learnt
// the token) cannot make the instance read other files.
func protoPathAllowed(p, dataDir string, allowed []string) error {
	real := func(q string) string {
		abs, err := filepath.Abs(q)
		if err != nil {
			return filepath.Clean(q)
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		return abs
	}
	under := func(q, dir string) bool {
		rel, err := filepath.Rel(dir, q)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
	}
	rp, rd := real(p), real(dataDir)
	if dataDir != "" && (under(rp, rd) || under(rd, rp)) {
		return fmt.Errorf("%s: schemas are never read from the data directory or a folder that holds it", p)
	}
	for _, a := range allowed {
		if a != "" && under(rp, real(a)) {
			return nil
		}
	}
	return fmt.Errorf("%s is not under a folder you chose: start with --proto-path, choose it in the window (Capture ▸ Protobuf schemas…), or allow it with `inspector rules allow-folder DIR`", p)
}

// protoHandlers serve
//
//	GET /api/v1/protos   {"paths": [...], "files": [...], "error"?}
//	PUT /api/v1/protos   {"paths": [...]} → the GET document (loads the folders now);
//	                     403 for a path not under a folder the user chose (protoPathAllowed)
//
// folders lists the map-local folders the user allowed (nil: none).
func protoHandlers(dataDir string, folders func() []string) map[string]http.Handler {
	return map[string]http.Handler{
		"GET /api/v1/protos": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, currentProtoState()) }),
		"PUT /api/v1/protos": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in struct {
				Paths []string `json:"paths"`
			}
			if !readJSON(w, r, &in, false) {
				return
			}
			for _, d := range in.Paths {
				if fi, err := os.Stat(d); err != nil {
					writeJSONError(w, http.StatusBadRequest, err.Error())
					return
				} else if !fi.IsDir() && !strings.HasSuffix(d, ".proto") && !strings.HasSuffix(d, ".pb") && !strings.HasSuffix(d, ".binpb") {
					writeJSONError(w, http.StatusBadRequest, d+": not a folder, .proto file or descriptor set")
					return
				}
			}
			instanceProtos() // the start-time folders, once
			instanceProtosMu.Lock()
			allowed := append(append([]string(nil), startProtoPath...), instanceProtoPath...)
			instanceProtosMu.Unlock()
			if folders != nil {
				allowed = append(allowed, folders()...)
			}
			for _, d := range in.Paths {
				if err := protoPathAllowed(d, dataDir, allowed); err != nil {
					writeJSONError(w, http.StatusForbidden, err.Error())
					return
				}
			}
			setInstanceProtoPath(in.Paths) // a file that fails is reported in the answer's error
			writeJSON(w, currentProtoState())
		}),
	}
}

// contentPattern serves a session's decoded views, as `show --json` prints them under
// "content", with the instance's schemas.
const contentPattern = "GET /api/v1/sessions/{id}/content"

func contentHandler(st *store.Store, protos func() *content.Protos) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ss, ok := pathSession(w, r, st); ok {
			writeJSON(w, buildShowContent(ss, protos()))
		}
	})
}

// pathSession loads the session the {id} path value names; on a bad id (400), an
// unknown session (404) or a store error (500) it has written the JSON error and ok is
// false.
func pathSession(w http.ResponseWriter, r *http.Request, st *store.Store) (ss *session.Session, ok bool) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a session id", r.PathValue("id")))
		return nil, false
	}
	ss, err = st.Get(session.ID(id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSONError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeJSONError(w, http.StatusInternalServerError, err.Error())
	default:
		return ss, true
	}
	return nil, false
}

// protoSchemas is the window's view of the instance's schemas (ui.ProtoSchemas).
type protoSchemas struct{}

func (protoSchemas) State() (paths, files []string, loadErr string) {
	st := currentProtoState()
	return st.Paths, st.Files, st.Error
}

func (protoSchemas) SetPaths(paths []string) error {
	_, err := setInstanceProtoPath(paths)
	return err
}
