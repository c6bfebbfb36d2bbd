package server

import (
	_ "embed" // the API's descriptors, with their comments
	"errors"
	"fmt"

	"connectrpc.com/grpcreflect/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The reflection services' own descriptors, which grpcreflect serves by default from a
	// copy of its own: a resolver of ours must find them too (grpcurl describe lists them).
	_ "google.golang.org/grpc/reflection/grpc_reflection_v1"
	_ "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
)

// apiDescriptors is the API's files (api/hopper/v1, not their imports) as a FileDescriptorSet
// with source info, which `make gen` builds with buf: the generated Go code leaves the comments
// out, and gRPC reflection serves these instead, so that grpcurl describe explains each field.
//
//go:embed reflection.binpb
var apiDescriptors []byte

// reflectionResolver finds the descriptors gRPC reflection serves: the API's files with their
// comments, every other file (google/protobuf/*, the reflection services) as the binary
// registered it.
func reflectionResolver() (protodesc.Resolver, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(apiDescriptors, &set); err != nil {
		return nil, fmt.Errorf("read the API's descriptors: %w", err)
	}
	files := new(protoregistry.Files)
	both := firstOf{files, protoregistry.GlobalFiles}
	for _, fdp := range set.GetFile() { // buf writes a file after its imports
		if err := sameAsGenerated(fdp); err != nil {
			return nil, err
		}
		fd, err := protodesc.NewFile(fdp, both)
		if err != nil {
			return nil, fmt.Errorf("read the API's descriptor of %s: %w", fdp.GetName(), err)
		}
		if err := files.RegisterFile(fd); err != nil {
			return nil, fmt.Errorf("register the API's descriptor of %s: %w", fdp.GetName(), err)
		}
	}
	return both, nil
}

// sameAsGenerated checks that fdp, but for its comments, is the file the generated code
// registered: reflection must describe the API the server serves (make gen builds both).
func sameAsGenerated(fdp *descriptorpb.FileDescriptorProto) error {
	gen, err := protoregistry.GlobalFiles.FindFileByPath(fdp.GetName())
	if err != nil {
		return fmt.Errorf("the API's descriptor of %s has no generated code: run make gen", fdp.GetName())
	}
	bare := proto.CloneOf(fdp)
	bare.SourceCodeInfo = nil
	if !proto.Equal(bare, protodesc.ToFileDescriptorProto(gen)) {
		return fmt.Errorf("the API's descriptor of %s is not its generated code's: run make gen", fdp.GetName())
	}
	return nil
}

// reflectionOptions serve the API's comments through gRPC reflection.
func reflectionOptions() ([]grpcreflect.Option, error) {
	r, err := reflectionResolver()
	if err != nil {
		return nil, err
	}
	return []grpcreflect.Option{grpcreflect.WithDescriptorResolver(r)}, nil
}

// firstOf resolves with its first resolver, then, for what that one does not know, its second.
type firstOf [2]protodesc.Resolver

func (r firstOf) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	fd, err := r[0].FindFileByPath(path)
	if errors.Is(err, protoregistry.NotFound) {
		return r[1].FindFileByPath(path)
	}
	return fd, err
}

func (r firstOf) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	d, err := r[0].FindDescriptorByName(name)
	if errors.Is(err, protoregistry.NotFound) {
		return r[1].FindDescriptorByName(name)
	}
	return d, err
}
