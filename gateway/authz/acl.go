// Package authz is Kafka's ACL model and its matching (docs/design.md §9):
// bindings of a resource pattern to a principal, host, operation and
// permission, the filters DescribeAcls and DeleteAcls select them with, and
// the decision a Kafka broker's ACL authorizer takes for one action. It is
// pure logic: the gateway feeds it bindings (from a Store) and questions,
// and it answers without clocks or I/O.
package authz

import (
	"errors"
	"strings"
)

// ResourceType is a Kafka ACL resource type, with Kafka's wire codes.
type ResourceType int8

// The resource types, numbered as on the wire.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is how a binding's resource name matches resources.
type PatternType int8

// The pattern types, numbered as on the wire. Any and Match exist only in
// filters: Any selects bindings of every pattern type with the filter's
// name as it is, Match selects the bindings that apply to that name.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is a Kafka ACL operation.
type Operation int8

// The operations, numbered as on the wire.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

// Permission is whether a binding allows or denies.
type Permission int8

// The permission types, numbered as on the wire.
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

// Wildcards as Kafka spells them: a literal resource name "*" matches
// every resource of its type, the principal "User:*" every principal and
// the host "*" every host.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// ClusterName is the one name a CLUSTER resource has.
const ClusterName = "kafka-cluster"

// Anonymous is the principal of a client that did not authenticate
// (PLAINTEXT and SSL listeners), as Kafka names it.
const Anonymous = "User:ANONYMOUS"

// Binding is one ACL: who (principal, host) may or may not (permission)
// do what (operation) on which resources (type, name, pattern type).
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// Validate reports why Kafka would refuse to create b (its
// InvalidRequestException), or nil.
func (b Binding) Validate() error {
	switch {
	case b.ResourceType < ResourceTopic || b.ResourceType > ResourceUser:
		return errors.New("invalid resource type: it must be a concrete type, not ANY or UNKNOWN")
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return errors.New("invalid pattern type: it must be LITERAL or PREFIXED")
	case b.Operation < OpAll || b.Operation > OpDescribeTokens:
		return errors.New("invalid operation: it must be a concrete operation, not ANY or UNKNOWN")
	case b.Permission != PermAllow && b.Permission != PermDeny:
		return errors.New("invalid permission type: it must be ALLOW or DENY")
	case b.ResourceName == "":
		return errors.New("resource name should not be empty")
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return errors.New("the only valid name for the CLUSTER resource is " + ClusterName)
	case b.Host == "":
		return errors.New("host should not be empty: use * for every host")
	}
	typ, name, ok := strings.Cut(b.Principal, ":")
	if !ok || typ == "" || name == "" {
		return errors.New("invalid principal " + quote(b.Principal) + ": want Type:name, as User:alice")
	}
	return nil
}

func quote(s string) string { return "'" + s + "'" }

// Filter selects bindings, as DescribeAcls and DeleteAcls name them: a
// nil name, principal or host matches any, ResourceAny, OpAny and PermAny
// any type, operation and permission; the pattern type is as described at
// PatternType.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate reports why Kafka would refuse f, or nil.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == ResourceUnknown || f.ResourceType > ResourceUser || f.ResourceType < 0:
		return errors.New("invalid resource type in the filter")
	case f.PatternType == PatternUnknown || f.PatternType > PatternPrefixed || f.PatternType < 0:
		return errors.New("invalid pattern type in the filter")
	case f.Operation == OpUnknown || f.Operation > OpDescribeTokens || f.Operation < 0:
		return errors.New("invalid operation in the filter")
	case f.Permission == PermUnknown || f.Permission > PermAllow || f.Permission < 0:
		return errors.New("invalid permission type in the filter")
	}
	return nil
}

// Matches reports whether f selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if !f.matchesPattern(b) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermAny || f.Permission == b.Permission
}

func (f Filter) matchesPattern(b Binding) bool {
	switch f.PatternType {
	case PatternAny:
		return f.ResourceName == nil || *f.ResourceName == b.ResourceName
	case PatternMatch:
		if f.ResourceName == nil {
			return true
		}
		return patternCovers(b.PatternType, b.ResourceName, *f.ResourceName)
	default:
		return f.PatternType == b.PatternType && (f.ResourceName == nil || *f.ResourceName == b.ResourceName)
	}
}

// patternCovers reports whether a binding's pattern applies to the
// resource called name.
func patternCovers(pt PatternType, pattern, name string) bool {
	switch pt {
	case PatternLiteral:
		return pattern == name || pattern == WildcardResource
	case PatternPrefixed:
		return strings.HasPrefix(name, pattern)
	}
	return false
}
