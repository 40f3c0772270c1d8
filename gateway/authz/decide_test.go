package authz

import "testing"

func allow(rt ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: WildcardHost, Operation: op, Permission: PermAllow}
}

func deny(rt ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	b := allow(rt, name, pt, principal, op)
	b.Permission = PermDeny
	return b
}

func TestAllowed(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	topicReq := func(principal string, op Operation, name string) Request {
		return Request{Principal: principal, Host: "10.0.0.1", Op: op, Type: ResourceTopic, Name: name}
	}
	cases := []struct {
		name   string
		acls   []Binding
		policy Policy
		req    Request
		want   bool
	}{
		{"no acls, default denies", nil, Policy{}, topicReq(alice, OpRead, "t"), false},
		{"no acls, allow everyone if none", nil, Policy{AllowIfNoACL: true}, topicReq(alice, OpRead, "t"), true},
		{"acl of another principal on the resource: not 'no acl found'",
			[]Binding{allow(ResourceTopic, "t", PatternLiteral, bob, OpRead)}, Policy{AllowIfNoACL: true}, topicReq(alice, OpRead, "t"), false},
		{"acl on another resource leaves this one without acls",
			[]Binding{allow(ResourceTopic, "u", PatternLiteral, bob, OpRead)}, Policy{AllowIfNoACL: true}, topicReq(alice, OpRead, "t"), true},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpRead, "t"), true},
		{"literal allow is not a prefix", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpRead, "t2"), false},
		{"other operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpWrite, "t"), false},
		{"other principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(bob, OpRead, "t"), false},
		{"other resource type", []Binding{allow(ResourceGroup, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpRead, "t"), false},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpRead, "anything"), true},
		{"prefixed '*' is no wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, alice, OpRead)}, Policy{}, topicReq(alice, OpRead, "anything"), false},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, OpRead)}, Policy{}, topicReq(bob, OpRead, "t"), true},
		{"prefixed allow", []Binding{allow(ResourceTopic, "orders-", PatternPrefixed, alice, OpWrite)}, Policy{}, topicReq(alice, OpWrite, "orders-eu"), true},
		{"prefixed allow equal name", []Binding{allow(ResourceTopic, "orders-", PatternPrefixed, alice, OpWrite)}, Policy{}, topicReq(alice, OpWrite, "orders-"), true},
		{"prefixed allow other prefix", []Binding{allow(ResourceTopic, "orders-", PatternPrefixed, alice, OpWrite)}, Policy{}, topicReq(alice, OpWrite, "order"), false},
		{"ALL allows everything", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAll)}, Policy{}, topicReq(alice, OpAlterConfigs, "t"), true},
		{"READ implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpDescribe, "t"), true},
		{"WRITE implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, Policy{}, topicReq(alice, OpDescribe, "t"), true},
		{"DELETE implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpDelete)}, Policy{}, topicReq(alice, OpDescribe, "t"), true},
		{"ALTER implies DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAlter)}, Policy{}, topicReq(alice, OpDescribe, "t"), true},
		{"CREATE does not imply DESCRIBE", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpCreate)}, Policy{}, topicReq(alice, OpDescribe, "t"), false},
		{"DESCRIBE implies nothing", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpDescribe)}, Policy{}, topicReq(alice, OpRead, "t"), false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAlterConfigs)}, Policy{}, topicReq(alice, OpDescribeConfigs, "t"), true},
		{"DESCRIBE_CONFIGS does not imply ALTER_CONFIGS", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpDescribeConfigs)}, Policy{}, topicReq(alice, OpAlterConfigs, "t"), false},
		{"deny wins over allow", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead), deny(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpRead, "t"), false},
		{"wildcard deny wins over literal allow", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead), deny(ResourceTopic, "*", PatternLiteral, WildcardPrincipal, OpRead)}, Policy{}, topicReq(alice, OpRead, "t"), false},
		{"prefixed deny wins over literal allow", []Binding{
			allow(ResourceTopic, "secret-x", PatternLiteral, alice, OpRead), deny(ResourceTopic, "secret-", PatternPrefixed, alice, OpAll)}, Policy{}, topicReq(alice, OpRead, "secret-x"), false},
		{"deny of READ does not deny DESCRIBE", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpDescribe), deny(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, topicReq(alice, OpDescribe, "t"), true},
		{"deny of another principal does not apply", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpRead), deny(ResourceTopic, "t", PatternLiteral, bob, OpRead)}, Policy{}, topicReq(alice, OpRead, "t"), true},
		{"super user beats deny", []Binding{deny(ResourceTopic, "t", PatternLiteral, alice, OpAll)},
			Policy{SuperUsers: map[string]bool{alice: true}}, topicReq(alice, OpWrite, "t"), true},
		{"super user needs no acl", nil, Policy{SuperUsers: map[string]bool{alice: true}}, topicReq(alice, OpWrite, "t"), true},
		{"host must match", []Binding{{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: alice, Host: "10.0.0.2", Operation: OpRead, Permission: PermAllow}},
			Policy{}, topicReq(alice, OpRead, "t"), false},
		{"exact host matches", []Binding{{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: alice, Host: "10.0.0.1", Operation: OpRead, Permission: PermAllow}},
			Policy{}, topicReq(alice, OpRead, "t"), true},
		{"cluster", []Binding{allow(ResourceCluster, ClusterName, PatternLiteral, alice, OpCreate)}, Policy{},
			Request{Principal: alice, Host: "h", Op: OpCreate, Type: ResourceCluster, Name: ClusterName}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.policy.Allowed(NewSet(c.acls), c.req); got != c.want {
				t.Errorf("Allowed = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAllowedOnAny(t *testing.T) {
	const alice = "User:alice"
	req := Request{Principal: alice, Host: "h", Op: OpWrite, Type: ResourceTopic}
	cases := []struct {
		name string
		acls []Binding
		pol  Policy
		want bool
	}{
		{"none", nil, Policy{}, false},
		{"none, allow if none", nil, Policy{AllowIfNoACL: true}, true},
		{"one literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite)}, Policy{}, true},
		{"ALL allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpAll)}, Policy{}, true},
		{"read only", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpRead)}, Policy{}, false},
		{"allow covered by wildcard deny", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite), deny(ResourceTopic, "*", PatternLiteral, alice, OpWrite)}, Policy{}, false},
		{"allow covered by prefixed deny", []Binding{
			allow(ResourceTopic, "ab", PatternPrefixed, alice, OpWrite), deny(ResourceTopic, "a", PatternPrefixed, alice, OpWrite)}, Policy{}, false},
		{"prefixed allow wider than the literal deny", []Binding{
			allow(ResourceTopic, "a", PatternPrefixed, alice, OpWrite), deny(ResourceTopic, "a", PatternLiteral, alice, OpWrite)}, Policy{}, true},
		{"super user", nil, Policy{SuperUsers: map[string]bool{alice: true}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.pol.AllowedOnAny(NewSet(c.acls), req); got != c.want {
				t.Errorf("AllowedOnAny = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAuthorizedOperations(t *testing.T) {
	const alice = "User:alice"
	s := NewSet([]Binding{allow(ResourceTopic, "t", PatternLiteral, alice, OpWrite)})
	got := Policy{}.AuthorizedOperations(s, Request{Principal: alice, Host: "h", Type: ResourceTopic, Name: "t"})
	if want := int32(1<<OpWrite | 1<<OpDescribe); got != want {
		t.Errorf("authorized operations = %b, want %b", got, want)
	}
	if got, want := AllOperations(ResourceGroup), int32(1<<OpRead|1<<OpDelete|1<<OpDescribe); got != want {
		t.Errorf("all group operations = %b, want %b", got, want)
	}
}

func TestFilterMatches(t *testing.T) {
	lit := allow(ResourceTopic, "orders", PatternLiteral, "User:a", OpRead)
	pre := allow(ResourceTopic, "ord", PatternPrefixed, "User:a", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:a", OpRead)
	grp := allow(ResourceGroup, "orders", PatternLiteral, "User:a", OpRead)
	name := func(s string) *string { return &s }
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}
	cases := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"everything", any, []Binding{lit, pre, wild, grp}},
		{"type", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, []Binding{grp}},
		{"any pattern by name", Filter{ResourceType: ResourceTopic, ResourceName: name("orders"), PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, []Binding{lit}},
		{"match", Filter{ResourceType: ResourceTopic, ResourceName: name("orders"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, []Binding{lit, pre, wild}},
		{"literal", Filter{ResourceType: ResourceTopic, ResourceName: name("ord"), PatternType: PatternLiteral, Operation: OpAny, Permission: PermAny}, nil},
		{"prefixed", Filter{ResourceType: ResourceTopic, ResourceName: name("ord"), PatternType: PatternPrefixed, Operation: OpAny, Permission: PermAny}, []Binding{pre}},
		{"principal", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: name("User:b"), Operation: OpAny, Permission: PermAny}, nil},
		{"operation", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpWrite, Permission: PermAny}, nil},
		{"permission", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermDeny}, nil},
		{"host", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Host: name("*"), Operation: OpRead, Permission: PermAllow}, []Binding{lit, pre, wild, grp}},
	}
	s := NewSet([]Binding{grp, wild, pre, lit})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := s.Select(c.f)
			if NewSet(got).Len() != len(got) || len(got) != len(c.want) {
				t.Fatalf("selected %v, want %v", got, c.want)
			}
			want := NewSet(c.want).Bindings()
			for i := range got {
				if NewSet(got).Bindings()[i] != want[i] {
					t.Fatalf("selected %v, want %v", got, c.want)
				}
			}
		})
	}
	if left := s.Without(Filter{ResourceType: ResourceTopic, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}); left.Len() != 1 || left.Bindings()[0] != grp {
		t.Errorf("Without left %v, want only the group binding", left.Bindings())
	}
}

func TestValidate(t *testing.T) {
	ok := allow(ResourceTopic, "t", PatternLiteral, "User:a", OpRead)
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid binding refused: %v", err)
	}
	bad := map[string]func(*Binding){
		"any resource type": func(b *Binding) { b.ResourceType = ResourceAny },
		"match pattern":     func(b *Binding) { b.PatternType = PatternMatch },
		"any operation":     func(b *Binding) { b.Operation = OpAny },
		"any permission":    func(b *Binding) { b.Permission = PermAny },
		"empty name":        func(b *Binding) { b.ResourceName = "" },
		"cluster name":      func(b *Binding) { b.ResourceType = ResourceCluster },
		"principal no type": func(b *Binding) { b.Principal = "alice" },
		"principal no name": func(b *Binding) { b.Principal = "User:" },
		"empty host":        func(b *Binding) { b.Host = "" },
	}
	for name, change := range bad {
		b := ok
		change(&b)
		if b.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers("User:admin; User:ops;")
	if err != nil || len(got) != 2 || !got["User:admin"] || !got["User:ops"] {
		t.Fatalf("ParseSuperUsers = %v, %v", got, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil {
		t.Error("a principal without a type was accepted")
	}
}
