package server

import "connectrpc.com/connect/v2"

// ReleaseUnsent is the guard on Activate's answers, for tests that make a send fail.
func (s *Server) ReleaseUnsent(next connect.ServerFunc) connect.ServerFunc {
	return s.releaseUnsent(next)
}

// SetPushFault makes the pushes to the streams of worker call fault first, and fail with its
// error (nil: push). Set it before any stream opens.
func (s *Server) SetPushFault(fault func(worker string) error) { s.pushFault = fault }
