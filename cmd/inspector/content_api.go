package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
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

// protoHandlers serve
//
//	GET /api/v1/protos   {"paths": [...], "files": [...], "error"?}
//	PUT /api/v1/protos   {"paths": [...]} → the GET document (loads the folders now)
func protoHandlers() map[string]http.Handler {
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
