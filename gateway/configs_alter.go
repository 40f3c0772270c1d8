package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// What AlterConfigs (33_alter_configs.go) and IncrementalAlterConfigs
// (44_incremental_alter_configs.go) share: both answer each resource of the
// request on its own, as Kafka does, and differ only in how the request
// states a topic's changes. kmsg gives the two APIs' resources the same
// fields under different types, so each API keeps the few lines that copy
// them into its own response.

// alterConfigResource authorizes ALTER_CONFIGS on one resource of an
// AlterConfigs or IncrementalAlterConfigs request and alters it
// (alterResource), fill stating the request's changes. It returns the error
// code and message the resource is answered with, 0 and nil when it was
// altered (or, with validateOnly, would be).
func (gw *Gateway) alterConfigResource(ctx context.Context, r *request, rt kmsg.ConfigResourceType, name string, validateOnly bool,
	fill func(a *topics.Alter) *topics.ConfigError, groupFill func(a *groupAlter) *topics.ConfigError) (int16, *string) {
	if code := gw.authorizeConfigs(r, authz.OpAlterConfigs, rt, name); code != 0 {
		return code, nil
	}
	if cerr := gw.alterResource(ctx, r.Tenant(), rt, name, validateOnly, fill, groupFill); cerr != nil {
		return cerr.Code, kmsg.StringPtr(cerr.Msg)
	}
	return 0, nil
}

// alterResource runs one resource of an AlterConfigs or
// IncrementalAlterConfigs request: broker configs are refused, a group's
// changes go to its configs kept in DIS (alterGroupConfigs), groupFill
// stating them, and a topic's to its catalog (topics.Catalog.Alter), fill
// stating them.
func (gw *Gateway) alterResource(ctx context.Context, tn *tenant, rt kmsg.ConfigResourceType, name string, validateOnly bool,
	fill func(a *topics.Alter) *topics.ConfigError, groupFill func(a *groupAlter) *topics.ConfigError) *topics.ConfigError {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		return errBrokerConfigsStatic
	case kmsg.ConfigResourceTypeGroupConfig:
		return gw.alterGroupConfigs(ctx, tn, name, validateOnly, groupFill)
	default:
		return resourceTypeError(rt)
	}
	if why := topics.CheckName(name); why != "" {
		return &topics.ConfigError{Code: kerr.InvalidTopicException.Code, Msg: why}
	}
	return tn.catalog.Alter(ctx, name, validateOnly, fill)
}
