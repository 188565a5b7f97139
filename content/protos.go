package content

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// maxProtoFiles bounds how many .proto and descriptor-set files LoadProtos reads.
const maxProtoFiles = 5000

// Protos is a set of protobuf schemas loaded from .proto files (compiled in-process with
// protocompile, no protoc) and descriptor sets (`protoc -o`, `buf build -o`). It resolves
// a gRPC :path "/package.Service/Method" to the method's request and response types. A
// nil *Protos knows nothing; every method works on it.
type Protos struct {
	methods  map[string]protoreflect.MethodDescriptor
	messages map[protoreflect.FullName]protoreflect.MessageDescriptor
	types    *protoregistry.Types
	files    []string
}

// LoadProtos loads every .proto file under the given folders (each folder is also an
// import path, so `import "a/b.proto"` resolves against any of them; the well-known
// google/protobuf types are built in) and every descriptor set (*.pb, *.desc,
// *.protoset, *.binpb). A path may also name one descriptor-set or .proto file. Files
// that fail to parse or link are reported in err (each by name and position) while the
// others load, so one bad file does not hide the rest; p is non-nil whenever any path
// existed.
func LoadProtos(paths []string) (p *Protos, err error) {
	p = &Protos{methods: map[string]protoreflect.MethodDescriptor{},
		messages: map[protoreflect.FullName]protoreflect.MessageDescriptor{}, types: new(protoregistry.Types)}
	var errs []error
	var importPaths []string
	type src struct{ root, rel string }
	var sources []src
	var sets []string
	count := 0
	for _, root := range paths {
		root = strings.TrimSpace(root)
		if root == "" {
			continue
		}
		st, serr := os.Stat(root)
		if serr != nil {
			errs = append(errs, fmt.Errorf("proto path: %w", serr))
			continue
		}
		if !st.IsDir() {
			if strings.HasSuffix(root, ".proto") {
				importPaths = append(importPaths, filepath.Dir(root))
				sources = append(sources, src{filepath.Dir(root), filepath.Base(root)})
			} else {
				sets = append(sets, root)
			}
			continue
		}
		importPaths = append(importPaths, root)
		werr := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if count++; count > maxProtoFiles {
				return fmt.Errorf("proto path %s: more than %d files; the rest not loaded", root, maxProtoFiles)
			}
			switch ext := filepath.Ext(path); ext {
			case ".proto":
				rel, _ := filepath.Rel(root, path)
				sources = append(sources, src{root, filepath.ToSlash(rel)})
			case ".pb", ".desc", ".protoset", ".binpb":
				sets = append(sets, path)
			}
			return nil
		})
		if werr != nil {
			errs = append(errs, werr)
		}
	}
	for _, s := range sets {
		if e := p.addDescriptorSet(s); e != nil {
			errs = append(errs, e)
		}
	}
	if len(sources) > 0 {
		comp := protocompile.Compiler{
			Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: importPaths}),
			MaxParallelism: 1,
		}
		names := make([]string, len(sources))
		for i, s := range sources {
			names[i] = s.rel
		}
		files, cerr := comp.Compile(context.Background(), names...)
		if cerr != nil {
			// Compile one by one so a single bad file does not hide the rest.
			files = nil
			for _, n := range names {
				f, e := comp.Compile(context.Background(), n)
				if e != nil {
					errs = append(errs, e)
					continue
				}
				files = append(files, f...)
			}
		}
		for _, f := range files {
			p.addFile(f)
		}
	}
	sort.Strings(p.files)
	return p, errors.Join(errs...)
}

func (p *Protos) addDescriptorSet(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return fmt.Errorf("%s: not a descriptor set: %w", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		p.addFile(fd)
		return true
	})
	return nil
}

func (p *Protos) addFile(fd protoreflect.FileDescriptor) {
	p.files = append(p.files, fd.Path())
	svcs := fd.Services()
	for i := 0; i < svcs.Len(); i++ {
		s := svcs.Get(i)
		ms := s.Methods()
		for j := 0; j < ms.Len(); j++ {
			m := ms.Get(j)
			p.methods["/"+string(s.FullName())+"/"+string(m.Name())] = m
		}
	}
	var addMsgs func(ms protoreflect.MessageDescriptors)
	addMsgs = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			if _, dup := p.messages[m.FullName()]; !dup {
				p.messages[m.FullName()] = m
				_ = p.types.RegisterMessage(dynamicpb.NewMessageType(m))
			}
			addMsgs(m.Messages())
		}
	}
	addMsgs(fd.Messages())
}

// Files lists the loaded files' paths, sorted.
func (p *Protos) Files() []string {
	if p == nil {
		return nil
	}
	return p.files
}

// Method returns the method a gRPC / Connect request path names ("/pkg.Svc/Method",
// a query string ignored).
func (p *Protos) Method(path string) (protoreflect.MethodDescriptor, bool) {
	if p == nil {
		return nil, false
	}
	path, _, _ = strings.Cut(path, "?")
	m, ok := p.methods[path]
	return m, ok
}

// Message returns a message type by full name ("pkg.Msg").
func (p *Protos) Message(name string) (protoreflect.MessageDescriptor, bool) {
	if p == nil {
		return nil, false
	}
	m, ok := p.messages[protoreflect.FullName(strings.TrimPrefix(name, "."))]
	return m, ok
}

// MessageJSON decodes b as a message of type md and renders it as indented protojson.
func (p *Protos) MessageJSON(md protoreflect.MessageDescriptor, b []byte) (string, error) {
	msg := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(b, msg); err != nil {
		return "", fmt.Errorf("not a %s: %w", md.FullName(), err)
	}
	opts := protojson.MarshalOptions{Multiline: true, Indent: "  ", EmitUnpopulated: false}
	if p != nil {
		opts.Resolver = p.types
	}
	out, err := opts.Marshal(msg)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// EncodeJSON parses protojson text as a message of type md and returns its wire bytes,
// for editing a paused protobuf message as JSON.
func (p *Protos) EncodeJSON(md protoreflect.MessageDescriptor, text string) ([]byte, error) {
	msg := dynamicpb.NewMessage(md)
	opts := protojson.UnmarshalOptions{}
	if p != nil {
		opts.Resolver = p.types
	}
	if err := opts.Unmarshal([]byte(text), msg); err != nil {
		return nil, fmt.Errorf("not a %s: %w", md.FullName(), err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(msg)
}
