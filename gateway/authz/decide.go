package authz

import (
	"fmt"
	"slices"
	"strings"
)

// Set is an immutable collection of bindings, grouped by resource type so
// that a decision reads only the bindings of its type. Build a new Set for
// every change and swap it in whole; readers never lock.
type Set struct {
	all    []Binding
	byType map[ResourceType][]Binding
	// lost marks the empty set a store publishes when the ACLs it held
	// are gone (docs/security.md, "Where ACLs live"): only super users
	// are allowed, whatever AllowIfNoACL says, until a change writes a
	// new set, so losing the ACLs never opens what they closed.
	lost bool
}

// lostSet is the Set of a store whose ACLs are gone.
func lostSet() *Set {
	s := NewSet(nil)
	s.lost = true
	return s
}

// Lost reports whether the set stands for ACLs that were lost.
func (s *Set) Lost() bool { return s != nil && s.lost }

// NewSet returns the set of bs, duplicates dropped, in a stable order.
func NewSet(bs []Binding) *Set {
	s := &Set{byType: make(map[ResourceType][]Binding)}
	seen := make(map[Binding]bool, len(bs))
	for _, b := range bs {
		if seen[b] {
			continue
		}
		seen[b] = true
		s.all = append(s.all, b)
	}
	slices.SortFunc(s.all, compareBindings)
	for _, b := range s.all {
		s.byType[b.ResourceType] = append(s.byType[b.ResourceType], b)
	}
	return s
}

func compareBindings(a, b Binding) int {
	if c := int(a.ResourceType) - int(b.ResourceType); c != 0 {
		return c
	}
	if c := strings.Compare(a.ResourceName, b.ResourceName); c != 0 {
		return c
	}
	if c := int(a.PatternType) - int(b.PatternType); c != 0 {
		return c
	}
	if c := strings.Compare(a.Principal, b.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	if c := int(a.Operation) - int(b.Operation); c != 0 {
		return c
	}
	return int(a.Permission) - int(b.Permission)
}

// Bindings returns every binding of the set; the caller must not change it.
func (s *Set) Bindings() []Binding {
	if s == nil {
		return nil
	}
	return s.all
}

// Len is how many bindings the set holds.
func (s *Set) Len() int { return len(s.Bindings()) }

// Select returns the bindings f matches.
func (s *Set) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range s.Bindings() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// With returns a set holding s's bindings and bs.
func (s *Set) With(bs ...Binding) *Set {
	return NewSet(append(slices.Clone(s.Bindings()), bs...))
}

// Without returns a set holding s's bindings except those any of fs
// matches.
func (s *Set) Without(fs ...Filter) *Set {
	var keep []Binding
	for _, b := range s.Bindings() {
		if !slices.ContainsFunc(fs, func(f Filter) bool { return f.Matches(b) }) {
			keep = append(keep, b)
		}
	}
	return NewSet(keep)
}

func (s *Set) ofType(rt ResourceType) []Binding {
	if s == nil {
		return nil
	}
	return s.byType[rt]
}

// Policy is the authorizer's configuration besides the bindings: Kafka's
// super.users and allow.everyone.if.no.acl.found.
type Policy struct {
	SuperUsers map[string]bool
	// AllowIfNoACL allows an action on a resource no binding applies to,
	// whoever the principal; without it such actions are denied.
	AllowIfNoACL bool
}

// ParseSuperUsers reads Kafka's super.users syntax: principals separated
// by ';', as "User:admin;User:ops".
func ParseSuperUsers(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for p := range strings.SplitSeq(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		typ, name, ok := strings.Cut(p, ":")
		if !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("authz: super user %q: want Type:name, as User:admin", p)
		}
		out[p] = true
	}
	return out, nil
}

// Request is one action to decide: principal, from host, wants op on the
// resource of type Type called Name.
type Request struct {
	Principal string
	Host      string
	Op        Operation
	Type      ResourceType
	Name      string
}

// Allowed decides r as Kafka's ACL authorizer does: super users may do
// anything; otherwise a DENY binding that applies wins over every ALLOW;
// an ALLOW applies for its own operation, ALL, and the operations it
// implies (DESCRIBE from READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS
// from ALTER_CONFIGS); and a resource no binding applies to at all, for
// any principal, is decided by AllowIfNoACL.
func (p Policy) Allowed(s *Set, r Request) bool {
	if p.SuperUsers[r.Principal] {
		return true
	}
	if s.Lost() {
		return false
	}
	found, allowed := false, false
	for _, b := range s.ofType(r.Type) {
		if !patternCovers(b.PatternType, b.ResourceName, r.Name) {
			continue
		}
		found = true
		if !principalMatches(b.Principal, r.Principal) || !hostMatches(b.Host, r.Host) {
			continue
		}
		switch b.Permission {
		case PermDeny:
			if b.Operation == r.Op || b.Operation == OpAll {
				return false
			}
		case PermAllow:
			if allowImplies(b.Operation, r.Op) {
				allowed = true
			}
		}
	}
	if !found {
		return p.AllowIfNoACL
	}
	return allowed
}

func principalMatches(acl, principal string) bool {
	return acl == principal || acl == WildcardPrincipal
}

func hostMatches(acl, host string) bool { return acl == host || acl == WildcardHost }

// allowImplies reports whether an ALLOW of granted allows op.
func allowImplies(granted, op Operation) bool {
	switch {
	case granted == op, granted == OpAll:
		return true
	case op == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case op == OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// AllowedOnAny reports whether r's principal may do r.Op on at least one
// resource of r.Type (r.Name is ignored), as Kafka's authorizeByResourceType
// decides, which InitProducerId uses for idempotent producers that may
// write some topic: an ALLOW counts unless a DENY covers every resource it
// grants (a literal "*" deny, a prefixed deny of a prefix of its name, or
// a literal deny of the same literal name). With AllowIfNoACL, a type with
// no binding at all allows.
func (p Policy) AllowedOnAny(s *Set, r Request) bool {
	if p.SuperUsers[r.Principal] {
		return true
	}
	if s.Lost() {
		return false
	}
	bs := s.ofType(r.Type)
	if len(bs) == 0 {
		return p.AllowIfNoACL
	}
	applies := func(b Binding, perm Permission) bool {
		if b.Permission != perm || !principalMatches(b.Principal, r.Principal) || !hostMatches(b.Host, r.Host) {
			return false
		}
		if perm == PermDeny {
			return b.Operation == r.Op || b.Operation == OpAll
		}
		return allowImplies(b.Operation, r.Op)
	}
	for _, allow := range bs {
		if !applies(allow, PermAllow) {
			continue
		}
		denied := slices.ContainsFunc(bs, func(deny Binding) bool {
			return applies(deny, PermDeny) && denyCovers(deny, allow)
		})
		if !denied {
			return true
		}
	}
	return false
}

// denyCovers reports whether deny applies to every resource allow does.
func denyCovers(deny, allow Binding) bool {
	switch deny.PatternType {
	case PatternLiteral:
		return deny.ResourceName == WildcardResource ||
			(allow.PatternType == PatternLiteral && allow.ResourceName == deny.ResourceName)
	case PatternPrefixed:
		return strings.HasPrefix(allow.ResourceName, deny.ResourceName) && allow.ResourceName != WildcardResource
	}
	return false
}

// operationsOf lists the operations Kafka reports as authorized operations
// for each resource type, in the order of their bits.
var operationsOf = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDelete, OpDescribe},
	ResourceCluster:         {OpCreate, OpAlter, OpDescribe, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite},
	ResourceTransactionalID: {OpWrite, OpDescribe},
}

// AuthorizedOperations is the bit field Metadata, DescribeGroups and
// DescribeCluster answer when a client asks for authorized operations: bit
// n set when operation n is allowed on the resource, over the operations
// that exist for its type.
func (p Policy) AuthorizedOperations(s *Set, r Request) int32 {
	var bits int32
	for _, op := range operationsOf[r.Type] {
		r.Op = op
		if p.Allowed(s, r) {
			bits |= 1 << op
		}
	}
	return bits
}

// AllOperations is the authorized-operations bit field of a principal
// that may do everything on a resource of type rt, as a gateway without
// an authorizer answers.
func AllOperations(rt ResourceType) int32 {
	var bits int32
	for _, op := range operationsOf[rt] {
		bits |= 1 << op
	}
	return bits
}
