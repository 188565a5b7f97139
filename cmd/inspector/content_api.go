package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"

	"inspector/engine/content"
	"inspector/engine/session"
	"inspector/store"
)

// The running instance's protobuf schemas: `inspector --proto-path DIR[,DIR]` (or
// INSPECTOR_PROTO_PATH), loaded once at start; the control API's content route and the
// window read them through instanceProtos.
var (
	instanceProtoPath  []string
	instanceProtosOnce sync.Once
	instanceProtosVal  *content.Protos
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
		p, err := content.LoadProtos(dirs)
		if err != nil {
			fmt.Fprintf(stderr, "inspector: --proto-path: %v\n", err)
		}
		instanceProtosVal = p
	})
	return instanceProtosVal
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
