package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"connectrpc.com/grpcreflect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// gRPC reflection serves api/'s comments, which the generated code leaves out: the file that
// holds a method carries each message's and field's comment, so that grpcurl describe
// explains them. The reflection services still describe themselves.
func TestReflectionServesTheAPIsComments(t *testing.T) {
	t.Parallel()
	e := start(t)
	stream := grpcreflect.NewClient(connect.NewClient(connecthttp.NewTransport(h2cClient(t), e.url))).NewStream(t.Context())
	t.Cleanup(func() { _ = stream.Close() })

	fdps, err := stream.FileContainingSymbol("hopper.v1.JobService.Enqueue")
	require.NoError(t, err)
	files := registry(t, fdps)
	api, err := files.FindFileByPath(hopperv1.File_hopper_v1_hopper_proto.Path())
	require.NoError(t, err)
	comment := func(name protoreflect.FullName) string {
		d, err := files.FindDescriptorByName(name)
		require.NoError(t, err, name)
		return strings.TrimSpace(api.SourceLocations().ByDescriptor(d).LeadingComments)
	}
	require.Equal(t, "existing is true when an idempotency key returned a job enqueued before.",
		comment("hopper.v1.EnqueueResponse.existing"))
	require.Equal(t, "JobSpec describes a job to enqueue. Only kind is required.", comment("hopper.v1.JobSpec"))
	require.Contains(t, comment("hopper.v1.JobService.Enqueue"), "Enqueue")
	require.Contains(t, comment("hopper.v1.DeadLetterServiceListRequest.include_replayed"), "include_replayed lists")

	for _, svc := range []protoreflect.FullName{grpcreflect.ReflectV1ServiceName, grpcreflect.ReflectV1AlphaServiceName} {
		fdps, err := stream.FileContainingSymbol(svc)
		require.NoError(t, err, svc)
		_, err = registry(t, fdps).FindDescriptorByName(svc)
		require.NoError(t, err, svc)
	}
}

// registry builds the files reflection sent (each file after its imports, but in any order).
func registry(t *testing.T, fdps []*descriptorpb.FileDescriptorProto) *protoregistry.Files {
	t.Helper()
	files, err := protodesc.NewFiles(&descriptorpb.FileDescriptorSet{File: fdps})
	require.NoError(t, err)
	return files
}
