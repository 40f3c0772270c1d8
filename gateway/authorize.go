package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// Authorizers, as --authorizer names them.
const (
	// AuthorizerNone allows everything, as a Kafka broker without an
	// authorizer does; the ACL APIs answer SECURITY_DISABLED.
	AuthorizerNone = "none"
	// AuthorizerACL decides every request by Kafka's ACLs, kept in DIS
	// (docs/security.md, "ACLs").
	AuthorizerACL = "acl"
)

// aclsPollInterval is how often a gateway reads ACL changes made through
// other gateways, which bounds how long they take to be enforced here.
const aclsPollInterval = 2 * time.Second

// aclRequest is what r asks the ACLs: may its principal, from its host,
// do op on the resource.
func aclRequest(r *request, op authz.Operation, rt authz.ResourceType, name string) authz.Request {
	return authz.Request{Principal: r.Principal(), Host: r.ClientHost(), Op: op, Type: rt, Name: name}
}

// permits reports whether r may do op on the resource, without a log line:
// for what Metadata and ListGroups leave out of a listing. Another gateway
// (request.Peer) may do everything: it acts for a client this gateway's
// peer already authorized.
func (gw *Gateway) permits(r *request, op authz.Operation, rt authz.ResourceType, name string) bool {
	if gw.acls == nil || r.Peer() {
		return true
	}
	return gw.aclPolicy.Allowed(gw.acls.Current(), aclRequest(r, op, rt, name))
}

// authorize is permits for a request that names the resource: a denial is
// logged, and the caller answers Kafka's authorization error.
func (gw *Gateway) authorize(r *request, op authz.Operation, rt authz.ResourceType, name string) bool {
	if gw.permits(r, op, rt, name) {
		return true
	}
	r.Log().Info().Str("principal", r.Principal()).Str("api", r.API()).Str("operation", opName(op)).
		Str("resource_type", resourceTypeName(rt)).Str("resource", name).Msg("denied by ACLs")
	return false
}

// authorizeCluster authorizes op on the cluster resource.
func (gw *Gateway) authorizeCluster(r *request, op authz.Operation) bool {
	return gw.authorize(r, op, authz.ResourceCluster, authz.ClusterName)
}

// authorizedOps answers an authorized-operations field for the resource.
func (gw *Gateway) authorizedOps(r *request, rt authz.ResourceType, name string) int32 {
	if gw.acls == nil {
		return authz.AllOperations(rt)
	}
	return gw.aclPolicy.AuthorizedOperations(gw.acls.Current(), aclRequest(r, authz.OpUnknown, rt, name))
}

// Kafka's authorization error codes, by resource type.
var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
)

func opName(op authz.Operation) string { return kmsg.ACLOperation(op).String() }

func resourceTypeName(rt authz.ResourceType) string { return kmsg.ACLResourceType(rt).String() }

// newACLPolicy checks the authorizer settings of cfg.
func newACLPolicy(cfg *Config) (authz.Policy, error) {
	switch cfg.Authorizer {
	case "", AuthorizerNone, AuthorizerACL:
	default:
		return authz.Policy{}, fmt.Errorf("gateway: authorizer must be none or acl, not %q", cfg.Authorizer)
	}
	supers, err := authz.ParseSuperUsers(strings.Join(cfg.SuperUsers, ";"))
	if err != nil {
		return authz.Policy{}, err
	}
	if cfg.Authorizer == AuthorizerACL && len(cfg.ACLKey) == 0 {
		return authz.Policy{}, errors.New("gateway: the ACL authorizer needs Config.ACLKey, the key every gateway of the DIS project signs and verifies the stored ACLs with")
	}
	return authz.Policy{SuperUsers: supers, AllowIfNoACL: cfg.AllowEveryoneIfNoACLFound}, nil
}

// startACLs reads the ACLs before any listener serves, so the first
// request is decided by them, and follows their changes from then on.
// Without an authorizer it warns when a listener is reachable from other
// hosts: everyone there may do everything.
func (gw *Gateway) startACLs(specs []Listener) error {
	if gw.acls == nil {
		for _, spec := range specs {
			if host, _, err := net.SplitHostPort(spec.Addr); err == nil && !isLoopback(host) {
				gw.log.Warn().Str("listen", spec.Addr).Str("protocol", string(spec.Protocol)).
					Msg("no authorizer (--authorizer=none): every client of this listener may read, write and delete everything")
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(gw.ctx, gw.cfg.RequestTimeout)
	defer cancel()
	if err := gw.acls.Refresh(ctx); err != nil {
		return fmt.Errorf("gateway: reading the ACLs from DIS stream %s: %w", authz.StreamName, err)
	}
	gw.log.Info().Int("acls", gw.acls.Current().Len()).Int("super_users", len(gw.aclPolicy.SuperUsers)).
		Bool("allow_everyone_if_no_acl_found", gw.aclPolicy.AllowIfNoACL).Msg("ACL authorizer started")
	gw.panics.Go("ACL follower", func() { gw.acls.Run(gw.ctx, aclsPollInterval) })
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// describableTopics answers TOPIC_AUTHORIZATION_FAILED in resp for every
// name r may not DESCRIBE, and returns the rest. A topic the request named
// by id only (in byID) is answered with its id and no name, as Kafka does,
// so a principal learns no name it may not see.
func (gw *Gateway) describableTopics(r *request, resp *kmsg.MetadataResponse, names []string, byID map[string][16]byte) []string {
	return slices.DeleteFunc(names, func(name string) bool {
		if gw.authorize(r, authz.OpDescribe, authz.ResourceTopic, name) {
			return false
		}
		id, asked := byID[name]
		resp.Topics = append(resp.Topics, deniedTopicMetadata(name, id, asked))
		return true
	})
}

// deniedTopicMetadata answers for a topic the client may not describe,
// under the name or the id it was asked by, so an id reveals no name.
func deniedTopicMetadata(name string, id [16]byte, byID bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.ErrorCode = topicDenied
	if byID {
		mt.TopicID = id
	} else {
		mt.Topic = kmsg.StringPtr(name)
	}
	return mt
}

// describable is the topics of names that r's principal may describe, in
// order, for answers that list topics rather than name them (a denial
// there is not logged: every listing would log one).
func (gw *Gateway) describable(r *request, names []string) []string {
	if gw.acls == nil {
		return names
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		return !gw.permits(r, authz.OpDescribe, authz.ResourceTopic, n)
	})
}

// mayCreateTopic reports whether r may create the topic: CREATE on the
// cluster or on the topic, as Kafka checks for CreateTopics and for
// Metadata's auto-creation.
func (gw *Gateway) mayCreateTopic(r *request, name string) bool {
	return gw.permits(r, authz.OpCreate, authz.ResourceCluster, authz.ClusterName) ||
		gw.authorize(r, authz.OpCreate, authz.ResourceTopic, name)
}

// metadataAuthorizedOps fills the authorized-operations fields a Metadata
// request asked for (v8+; the cluster's up to v10).
func (gw *Gateway) metadataAuthorizedOps(r *request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.ErrorCode == 0 && t.Topic != nil {
				t.AuthorizedOperations = gw.authorizedOps(r, authz.ResourceTopic, *t.Topic)
			}
		}
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = gw.authorizedOps(r, authz.ResourceCluster, authz.ClusterName)
	}
}

// hideUndescribableOffsets applies topic DESCRIBE to an OffsetFetch
// answer, as Kafka does: a topic the client named is answered
// TOPIC_AUTHORIZATION_FAILED, and one it did not (a fetch of all the
// group's offsets) is left out.
func (gw *Gateway) hideUndescribableOffsets(r *request, out *kmsg.OffsetFetchResponseGroup, all bool) {
	if gw.acls == nil {
		return
	}
	out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
		if all {
			return !gw.permits(r, authz.OpDescribe, authz.ResourceTopic, t.Topic)
		}
		if gw.authorize(r, authz.OpDescribe, authz.ResourceTopic, t.Topic) {
			return false
		}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, topicDenied
		}
		return false
	})
}

// setTopicCommitCode answers every partition of topic ti of an
// OffsetCommit with code.
func setTopicCommitCode(resp *kmsg.OffsetCommitResponse, ti int, code int16) {
	for pi := range resp.Topics[ti].Partitions {
		resp.Topics[ti].Partitions[pi].ErrorCode = code
	}
}

// createTopicDenied is CreateTopics' answer for a topic r may not create.
func createTopicDenied(topic string) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic, rt.ErrorCode = topic, topicDenied
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	return rt
}

// mayWriteIdempotently reports whether r may get a producer id:
// IDEMPOTENT_WRITE on the cluster, or since KIP-679 WRITE on any topic.
func (gw *Gateway) mayWriteIdempotently(r *request) bool {
	if gw.acls == nil || gw.permits(r, authz.OpIdempotentWrite, authz.ResourceCluster, authz.ClusterName) {
		return true
	}
	if gw.aclPolicy.AllowedOnAny(gw.acls.Current(), aclRequest(r, authz.OpWrite, authz.ResourceTopic, "")) {
		return true
	}
	return gw.authorizeCluster(r, authz.OpIdempotentWrite)
}

// authorizeConfigs authorizes op on a config resource: a topic, a group
// (KIP-848 group configs), or for broker and broker-logger resources the
// cluster. It returns the error code to answer, or 0.
func (gw *Gateway) authorizeConfigs(r *request, op authz.Operation, rt kmsg.ConfigResourceType, name string) int16 {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !gw.authorize(r, op, authz.ResourceTopic, name) {
			return topicDenied
		}
		return 0
	case kmsg.ConfigResourceTypeGroupConfig:
		if !gw.authorize(r, op, authz.ResourceGroup, name) {
			return groupDenied
		}
		return 0
	}
	if !gw.authorizeCluster(r, op) {
		return clusterDenied
	}
	return 0
}
