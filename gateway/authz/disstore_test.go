package authz

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

func TestDISStoreSharesChangesAndLosesNoneUnderRaces(t *testing.T) {
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	ctx := context.Background()
	a := NewDISStore(dis, zerolog.Nop(), 1<<20)
	b := NewDISStore(dis, zerolog.Nop(), 1<<20)
	if err := a.Refresh(ctx); err != nil || a.Current().Len() != 0 {
		t.Fatalf("a store over no stream: %d bindings, %v", a.Current().Len(), err)
	}
	const perStore = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*perStore)
	for i, s := range []*DISStore{a, b} {
		wg.Go(func() {
			for n := range perStore {
				bind := allow(ResourceTopic, fmt.Sprintf("t-%d-%d", i, n), PatternLiteral, "User:x", OpRead)
				if _, err := s.Update(ctx, func(cur *Set) (*Set, error) { return cur.With(bind), nil }); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for name, s := range map[string]*DISStore{"a": a, "b": b} {
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.Current().Len(); got != 2*perStore {
			t.Errorf("store %s holds %d bindings, want %d: a concurrent change was lost", name, got, 2*perStore)
		}
	}
	// A gateway started later reads the same set from DIS alone.
	c := NewDISStore(dis, zerolog.Nop(), 1<<20)
	if err := c.Refresh(ctx); err != nil || c.Current().Len() != 2*perStore {
		t.Fatalf("a new store read %d bindings (%v), want %d", c.Current().Len(), err, 2*perStore)
	}
	if _, err := c.Update(ctx, func(cur *Set) (*Set, error) {
		return cur.Without(Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); err != nil || a.Current().Len() != 0 {
		t.Errorf("after removing every binding through c, a holds %d (%v)", a.Current().Len(), err)
	}
	small := NewDISStore(dis, zerolog.Nop(), 64)
	if _, err := small.Update(ctx, func(cur *Set) (*Set, error) {
		return cur.With(allow(ResourceTopic, "a-rather-long-topic-name-to-pass-the-limit", PatternLiteral, "User:x", OpRead)), nil
	}); err == nil {
		t.Error("a set larger than a DIS record was stored")
	}
}

// A stream that holds no snapshot lost its ACLs to DIS retention: the store
// says so, and the policy lets only super users through, AllowIfNoACL or
// not, until a change writes a set again.
func TestDISStoreLostACLsFailClosed(t *testing.T) {
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	ctx := context.Background()
	if err := dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: StreamName, PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	s := NewDISStore(dis, zerolog.Nop(), 1<<20)
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.Current().Lost() {
		t.Fatal("a store over an emptied stream does not report its ACLs lost")
	}
	p := Policy{AllowIfNoACL: true, SuperUsers: map[string]bool{"User:admin": true}}
	bob := Request{Principal: "User:bob", Host: "127.0.0.1", Op: OpWrite, Type: ResourceTopic, Name: "orders"}
	if p.Allowed(s.Current(), bob) || p.AllowedOnAny(s.Current(), bob) {
		t.Fatal("with the ACLs lost, allow-if-no-ACL let a user through")
	}
	admin := bob
	admin.Principal = "User:admin"
	if !p.Allowed(s.Current(), admin) {
		t.Fatal("with the ACLs lost, a super user was refused")
	}
	bind := allow(ResourceTopic, "other", PatternLiteral, "User:x", OpRead)
	if _, err := s.Update(ctx, func(cur *Set) (*Set, error) { return cur.With(bind), nil }); err != nil {
		t.Fatal(err)
	}
	if s.Current().Lost() || !p.Allowed(s.Current(), bob) {
		t.Fatal("a set written after the loss did not end it")
	}
	// A store started later reads the new set, not a loss.
	later := NewDISStore(dis, zerolog.Nop(), 1<<20)
	if err := later.Refresh(ctx); err != nil || later.Current().Lost() || later.Current().Len() != 1 {
		t.Fatalf("a later store: lost %v, %d bindings, %v", later.Current().Lost(), later.Current().Len(), err)
	}
}
