package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"inspector/contract"
	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
)

func init() {
	register("openapi", "infer an OpenAPI 3.1 document from the stored sessions", runOpenAPI)
	register("openapi check", "check stored sessions against an OpenAPI document", runOpenAPICheck)
	register("openapi diff", "compare two OpenAPI documents (contract drift)", runOpenAPIDiff)
}

// each calls fn with every session matching the filter, in capture order, from the store
// or through the running instance's control API.
func (s *source) each(expr string, f *filter.Expr, fn func(*session.Session) error) error {
	switch {
	case s.st != nil:
		return s.st.Each(store.Query{Filter: f}, fn)
	case s.api != nil:
		var after session.ID
		for {
			sums, err := s.api.sessions(expr, after, 500)
			if err != nil {
				return err
			}
			for _, sum := range sums {
				full, err := s.api.session(sum.ID)
				if errors.Is(err, store.ErrNotFound) {
					continue // evicted meanwhile
				}
				if err != nil {
					return err
				}
				if err := fn(full); err != nil {
					return err
				}
			}
			if len(sums) < 500 {
				return nil
			}
			after = sums[len(sums)-1].ID
		}
	}
	return nil
}

// writeOutput writes through a temporary file renamed at the end (no half-written FILE),
// or to stdout for "-" or "".
func writeOutput(out string, write func(io.Writer) error) error {
	if out == "" || out == "-" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

func runOpenAPI(args []string) error {
	fs := newFlagSet("openapi")
	dataDir := dataDirFlag(fs)
	filterExpr := fs.String("filter", "", "only sessions matching this filter expression")
	host := fs.String("host", "", "only this host (host[:port] as in URLs)")
	out := fs.String("o", "", "output `FILE` (.json for JSON, else YAML; stdout when absent)")
	asJSON := fs.Bool("json", false, "write JSON (also when FILE ends in .json)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	f, err := parseFilterFlag(*filterExpr)
	if err != nil {
		return err
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	in := contract.NewInferrer()
	if err := src.each(*filterExpr, f, func(s *session.Session) error { in.Add(s); return nil }); err != nil {
		return err
	}
	st := in.Stats()
	doc := in.Document(contract.Options{Host: *host})
	if err := writeOutput(*out, func(w io.Writer) error {
		if *asJSON || strings.HasSuffix(*out, ".json") {
			return contract.WriteJSON(w, doc)
		}
		return contract.WriteYAML(w, doc)
	}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "openapi: %d sessions, %d operations over %d hosts, %d JSON bodies%s\n",
		st.Sessions, st.Operations, len(in.Hosts()), st.Bodies, skippedLine(st.Skipped))
	return nil
}

func skippedLine(sk map[string]int) string {
	if len(sk) == 0 {
		return ""
	}
	keys := make([]string, 0, len(sk))
	for k := range sk {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", sk[k], k))
	}
	return "; skipped: " + strings.Join(parts, ", ")
}

// errViolations makes `inspector openapi check` exit 1 when a session violates the contract.
var errViolations = errors.New("sessions violate the contract")

func runOpenAPICheck(args []string) error {
	fs := newFlagSet("openapi check")
	dataDir := dataDirFlag(fs)
	spec := fs.String("spec", "", "the OpenAPI document (`FILE`, JSON or YAML; required)")
	filterExpr := fs.String("filter", "", "only sessions matching this filter expression")
	asJSON := fs.Bool("json", false, "one JSON object per session: id, method, url, verdict")
	all := fs.Bool("all", false, "list conforming sessions too")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *spec == "" {
		return usagef("openapi check needs --spec FILE")
	}
	f, err := parseFilterFlag(*filterExpr)
	if err != nil {
		return err
	}
	doc, err := contract.LoadDocument(*spec)
	if err != nil {
		return err
	}
	v, err := contract.NewValidator(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", *spec, err)
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	n, bad := 0, 0
	enc := json.NewEncoder(stdout)
	err = src.each(*filterExpr, f, func(s *session.Session) error {
		vd := v.Check(s)
		if vd.Operation == "" && vd.Conforms {
			return nil // not an HTTP exchange
		}
		n++
		if !vd.Conforms {
			bad++
		}
		if vd.Conforms && !*all {
			return nil
		}
		if *asJSON {
			return enc.Encode(struct {
				ID     session.ID `json:"id"`
				Method string     `json:"method"`
				URL    string     `json:"url"`
				contract.Verdict
			}{s.ID, s.Request.Method, s.Request.URL, vd})
		}
		verdict := "conforms"
		if !vd.Conforms {
			verdict = strings.Join(vd.Problems, "; ")
		}
		_, err := fmt.Fprintf(stdout, "#%d %s %s: %s\n", s.ID, s.Request.Method, s.Request.URL, verdict)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "openapi check: %d sessions, %d conform, %d violate %s\n", n, n-bad, bad, *spec)
	if bad > 0 {
		return errViolations
	}
	return nil
}

func runOpenAPIDiff(args []string) error {
	fs := newFlagSet("openapi diff")
	asJSON := fs.Bool("json", false, "JSON array of changes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("openapi diff needs two documents: OLD NEW")
	}
	docs := make([]*openapi3.T, 2)
	for i := range docs {
		d, err := contract.LoadDocument(fs.Arg(i))
		if err != nil {
			return err
		}
		docs[i] = d
	}
	drift := contract.CompareDocuments(docs[0], docs[1])
	if *asJSON {
		if drift == nil {
			drift = []contract.Drift{}
		}
		if err := json.NewEncoder(stdout).Encode(drift); err != nil {
			return err
		}
	} else {
		for _, d := range drift {
			fmt.Fprintln(stdout, d)
		}
	}
	if len(drift) > 0 {
		return errDiffer
	}
	return nil
}

func init() {
	register("proto", "infer .proto files from the stored gRPC sessions", runProto)
}

func runProto(args []string) error {
	fs := newFlagSet("proto")
	dataDir := dataDirFlag(fs)
	filterExpr := fs.String("filter", "", "only sessions matching this filter expression")
	out := fs.String("o", "", "output `DIR` (required); files are written as PACKAGE/inferred.proto")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("proto needs -o DIR")
	}
	f, err := parseFilterFlag(*filterExpr)
	if err != nil {
		return err
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	in := contract.NewProtoInferrer()
	if err := src.each(*filterExpr, f, func(s *session.Session) error { in.Add(s); return nil }); err != nil {
		return err
	}
	files := in.ProtoFiles()
	if len(files) == 0 {
		return errors.New("no gRPC sessions match: nothing to infer")
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(*out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		text := files[name]
		if err := writeOutput(p, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
			return err
		}
		fmt.Fprintln(stdout, p)
	}
	st := in.Stats()
	fmt.Fprintf(stderr, "proto: %d gRPC sessions, %d methods, %d messages%s; decode with --proto-path %s\n",
		st.Sessions, st.Operations, st.Bodies, skippedLine(st.Skipped), *out)
	return nil
}

func init() {
	register("graphql", "the GraphQL operations seen and an SDL skeleton of their types", runGraphQL)
}

func runGraphQL(args []string) error {
	fs := newFlagSet("graphql")
	dataDir := dataDirFlag(fs)
	filterExpr := fs.String("filter", "", "only sessions matching this filter expression")
	out := fs.String("o", "", "output `FILE` (stdout when absent)")
	asJSON := fs.Bool("json", false, "JSON: per endpoint, its operations (with variables' schema) and the SDL")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	f, err := parseFilterFlag(*filterExpr)
	if err != nil {
		return err
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	in := contract.NewGraphQLInferrer()
	if err := src.each(*filterExpr, f, func(s *session.Session) error { in.Add(s); return nil }); err != nil {
		return err
	}
	eps := in.Endpoints()
	if len(eps) == 0 {
		return errors.New("no GraphQL sessions match: nothing to infer")
	}
	return writeOutput(*out, func(w io.Writer) error {
		if *asJSON {
			type endpoint struct {
				URL        string                      `json:"url"`
				Operations []contract.GraphQLOperation `json:"operations"`
				SDL        string                      `json:"sdl"`
			}
			var all []endpoint
			for _, ep := range eps {
				all = append(all, endpoint{ep, in.Operations(ep), in.SDL(ep)})
			}
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(all)
		}
		for _, ep := range eps {
			fmt.Fprintf(w, "# Operations seen at %s:\n", ep)
			for _, op := range in.Operations(ep) {
				name := op.Name
				if name == "" {
					name = "(anonymous)"
				}
				fmt.Fprintf(w, "#   %s %s: %d calls, %d with errors\n", op.Type, name, op.Count, op.Errors)
			}
			fmt.Fprintf(w, "\n%s\n", in.SDL(ep))
		}
		return nil
	})
}

// contractFlag adds --contract FILE: the OpenAPI document that contract: filter terms check
// sessions against (loaded when the flag is parsed, so a bad file fails at once).
func contractFlag(fs *flag.FlagSet) {
	fs.Func("contract", "OpenAPI `FILE` that the filter terms contract:violation and contract:ok check sessions against", func(v string) error {
		doc, err := contract.LoadDocument(v)
		if err != nil {
			return err
		}
		val, err := contract.NewValidator(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", v, err)
		}
		filter.SetContract(val.Filter())
		return nil
	})
}
