package hopperclient

import (
	"context"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apispec"
)

// ServerInfo describes the server: the build it runs (version, commit) and its store (kind
// and schema version).
type ServerInfo = hoppertype.ServerInfo

// InputLimits are the bounds a server puts on what it is sent (ServerInfo.InputLimits).
type InputLimits = hoppertype.InputLimits

// ServerInfo asks the server what it is. It needs no API key (any key, or none, will do), so
// it also tells whether the server at Config.URL is a Hopper server that answers. A store the
// server cannot reach is an error wrapping hopper.ErrUnavailable.
func (c *Client) ServerInfo(ctx context.Context) (*ServerInfo, error) {
	res, err := c.server.Info(ctx, &hopperv1.ServerServiceInfoRequest{})
	if err != nil {
		return nil, callErr("server info", err)
	}
	return apispec.FromServerInfo(res.GetServer()), nil
}
