package gateway

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// DescribeConfigs v0–v4.
//
// v1 added config sources and synonyms (include_synonyms); v3 config types
// and documentation (include_documentation); v4 is flexible. Topic configs
// come from the topic config table (gateway/topics) with values read from
// the DIS stream; the broker resource is this gateway (its node id), whose
// configs are all static. The cluster-default broker resource (empty name)
// holds only dynamic defaults in Kafka, and disgw has none, so it is
// answered with no configs. A group (the GROUP resource of KIP-848) has the
// consumer and share protocols' heartbeat intervals and session timeouts,
// the same for every group, and the share configs it may set
// (docs/design.md §14).

func init() {
	regKey(32, 0, 4, api[*kmsg.DescribeConfigsRequest]{Concurrent: handleDescribeConfigs, Errors: describeConfigsError})
}

// describeConfigsError answers every resource of req with code.
func describeConfigsError(req *kmsg.DescribeConfigsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func handleDescribeConfigs(ctx context.Context, gw *Gateway, r *request, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for i := range req.Resources {
		res := &req.Resources[i]
		if code := gw.authorizeConfigs(r, authz.OpDescribeConfigs, res.ResourceType, res.ResourceName); code != 0 {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		resp.Resources = append(resp.Resources, gw.describeResource(ctx, tn, req, res))
	}
	return resp, nil
}

func (gw *Gateway) describeResource(ctx context.Context, tn *tenant, req *kmsg.DescribeConfigsRequest, res *kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
	rr := kmsg.NewDescribeConfigsResponseResource()
	rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
	entries, cerr := gw.configEntries(ctx, tn, res.ResourceType, res.ResourceName)
	if cerr != nil {
		rr.ErrorCode, rr.ErrorMessage = cerr.Code, kmsg.StringPtr(cerr.Msg)
		return rr
	}
	for _, e := range entries {
		if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, e.Name) {
			continue
		}
		rr.Configs = append(rr.Configs, describedConfig(e, req.IncludeSynonyms, req.IncludeDocumentation))
	}
	return rr
}

// configEntries lists the configs of one resource.
func (gw *Gateway) configEntries(ctx context.Context, tn *tenant, rt kmsg.ConfigResourceType, name string) ([]topics.ConfigEntry, *topics.ConfigError) {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if why := topics.CheckName(name); why != "" {
			return nil, &topics.ConfigError{Code: kerr.InvalidTopicException.Code, Msg: why}
		}
		t, err := tn.catalog.Get(ctx, name)
		if err != nil {
			return nil, tn.catalog.LookupError(name, err)
		}
		return gw.topicCfg.Entries(t), nil
	case kmsg.ConfigResourceTypeBroker:
		switch name {
		case "":
			return nil, nil
		case strconv.Itoa(int(gw.cfg.NodeID)):
			return brokerConfigEntries(&gw.cfg), nil
		}
		return nil, topics.InvalidRequest("this is broker %d, not %q", gw.cfg.NodeID, name)
	case kmsg.ConfigResourceTypeGroupConfig:
		if name == "" {
			return nil, topics.InvalidRequest("a group config resource names a group")
		}
		entries, err := gw.groupConfigEntries(ctx, tn, name)
		if err != nil {
			return nil, &topics.ConfigError{Code: kafkaCodeForDIS(err), Msg: "reading the group's configs from DIS: " + err.Error()}
		}
		return entries, nil
	}
	return nil, resourceTypeError(rt)
}

// describedConfig is e on the wire. A config's synonyms list its own value
// when that is not the default, then the default.
func describedConfig(e topics.ConfigEntry, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	c.Value = kmsg.StringPtr(e.Value)
	c.ReadOnly = e.ReadOnly
	c.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
	c.Source = e.Source
	c.ConfigType = e.Type
	if docs {
		c.Documentation = kmsg.StringPtr(e.Doc)
	}
	if synonyms {
		if e.Source != kmsg.ConfigSourceDefaultConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: e.Name, Value: kmsg.StringPtr(e.Value), Source: e.Source})
		}
		if e.Source != kmsg.ConfigSourceStaticBrokerConfig {
			c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: e.Name, Value: kmsg.StringPtr(e.Def), Source: kmsg.ConfigSourceDefaultConfig})
		}
	}
	return c
}
