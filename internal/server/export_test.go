package server

import "connectrpc.com/connect/v2"

// ReleaseUnsent is the guard on Activate's answers, for tests that make a send fail.
func (s *Server) ReleaseUnsent(next connect.ServerFunc) connect.ServerFunc {
	return s.releaseUnsent(next)
}
