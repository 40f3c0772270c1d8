package gateway

import (
	"context"

	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
)

func (gw *Gateway) shareLimits() sharestate.Config { return sharestate.Config{}.WithDefaults() }

func (gw *Gateway) shareConfig(ctx context.Context, tn *tenant, group string) (plog.ShareGroupConfig, error) {
	return plog.ShareGroupConfig{Reset: plog.ShareResetEarliest}, nil
}
