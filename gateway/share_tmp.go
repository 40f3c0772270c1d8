package gateway

import (
	"context"

	"github.com/disgw/disgw/gateway/plog"
)

func (gw *Gateway) shareConfig(ctx context.Context, tn *tenant, group string) (plog.ShareGroupConfig, error) {
	return plog.ShareGroupConfig{Reset: plog.ShareResetEarliest}, nil
}
