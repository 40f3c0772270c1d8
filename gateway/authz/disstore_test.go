package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

func TestDISStoreSharesChangesAndLosesNoneUnderRaces(t *testing.T) {
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	ctx := context.Background()
	a, b := newStore(t, dis, testKey), newStore(t, dis, testKey)
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
	c := newStore(t, dis, testKey)
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
	small := newStore(t, dis, testKey)
	small.maxBytes = 64
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
	s := newStore(t, dis, testKey)
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
	later := newStore(t, dis, testKey)
	if err := later.Refresh(ctx); err != nil || later.Current().Lost() || later.Current().Len() != 1 {
		t.Fatalf("a later store: lost %v, %d bindings, %v", later.Current().Lost(), later.Current().Len(), err)
	}
}

// The policy of the tests below: admin is a super user, and no ACL means
// no access, so bob and ATTACKER get only what a binding grants.
var (
	testPolicy = Policy{SuperUsers: map[string]bool{"User:admin": true}}
	bobReads   = Request{Principal: "User:bob", Host: "127.0.0.1", Op: OpRead, Type: ResourceTopic, Name: "orders"}
	attacks    = []Request{
		{Principal: "User:ATTACKER", Host: "10.0.0.66", Op: OpAlter, Type: ResourceCluster, Name: ClusterName},
		{Principal: "User:ATTACKER", Host: "10.0.0.66", Op: OpRead, Type: ResourceTopic, Name: "orders"},
	}
	bobMayRead     = allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)
	attackerMayAll = []Binding{
		allow(ResourceCluster, ClusterName, PatternLiteral, "User:ATTACKER", OpAll),
		allow(ResourceTopic, "*", PatternLiteral, "User:ATTACKER", OpAll),
	}
)

// startACLs is an embedded DIS whose ACL stream holds version 1, bob's
// READ on orders, written through a store with testKey, which it returns.
func startACLs(t *testing.T) (*disclient.Client, *DISStore) {
	t.Helper()
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	s := newStore(t, dis, testKey)
	grant(t, s, bobMayRead)
	if s.chain.version != 1 {
		t.Fatalf("the first change stored version %d", s.chain.version)
	}
	return dis, s
}

// grant adds bs through s, as CreateAcls does.
func grant(t *testing.T, s *DISStore, bs ...Binding) {
	t.Helper()
	if _, err := s.Update(context.Background(), func(cur *Set) (*Set, error) { return cur.With(bs...), nil }); err != nil {
		t.Fatalf("CreateAcls: %v", err)
	}
}

// checkDecisions fails unless bob may read orders as granted and ATTACKER
// may do nothing.
func checkDecisions(t *testing.T, s *DISStore) {
	t.Helper()
	if cur := s.Current(); cur.Lost() || !testPolicy.Allowed(cur, bobReads) {
		t.Errorf("bob's READ is gone (lost %v)", cur.Lost())
	}
	for _, r := range attacks {
		if testPolicy.Allowed(s.Current(), r) {
			t.Errorf("ATTACKER was allowed %v on %q", r.Op, r.Name)
		}
	}
}

// checkLost fails unless s has lost its ACLs: only super users pass.
func checkLost(t *testing.T, s *DISStore) {
	t.Helper()
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur := s.Current()
	if !cur.Lost() {
		t.Fatalf("the ACLs are not lost: %d bindings in force", cur.Len())
	}
	admin := bobReads
	admin.Principal = "User:admin"
	open := Policy{SuperUsers: testPolicy.SuperUsers, AllowIfNoACL: true}
	if open.Allowed(cur, bobReads) || !open.Allowed(cur, admin) {
		t.Fatal("with the ACLs lost, someone other than a super user passed, or a super user did not")
	}
	for _, r := range attacks {
		if open.Allowed(cur, r) {
			t.Fatalf("with the ACLs lost, ATTACKER was allowed %v on %q", r.Op, r.Name)
		}
	}
}

// appendRecord writes data to the ACL stream straight through DIS, as
// anyone allowed to write the stream can.
func appendRecord(t *testing.T, dis disclient.API, data []byte) {
	t.Helper()
	resp, err := dis.PutRecords(context.Background(), &disclient.PutRecordsRequest{StreamName: StreamName,
		Records: []disclient.PutRecordsEntry{{Data: data, PartitionID: disclient.PartitionID(0)}}})
	if err != nil || resp.FailedRecordCount != 0 {
		t.Fatalf("appending to %s: %v %+v", StreamName, err, resp)
	}
}

// Someone without the key appends a snapshot of a higher version that
// grants ATTACKER everything, in the unsigned format of earlier disgw
// versions and in the signed one with a key of their own: no store takes
// either, the refusal is logged with where the record is (never the
// key), and CreateAcls goes on from the version the gateways wrote.
func TestDISStoreRefusesRecordsNotSignedWithItsKey(t *testing.T) {
	dis, a := startACLs(t)
	var logs bytes.Buffer
	a.log = zerolog.New(&logs)
	unsigned, err := json.Marshal(map[string]any{"version": 2, "acls": attackerMayAll})
	if err != nil {
		t.Fatal(err)
	}
	appendRecord(t, dis, unsigned)
	appendRecord(t, dis, signed(t, []byte("the attacker's own key"), 2, time.Now(), attackerMayAll...))
	if err := a.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, a)
	later := newStore(t, dis, testKey)
	if err := later.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, later)
	for _, want := range []string{StreamName, `"sequence_number":1`, `"sequence_number":2`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log of the refused records lacks %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), string(testKey)) {
		t.Error("the log shows the ACL key")
	}
	grant(t, a, allow(ResourceTopic, "payments", PatternLiteral, "User:bob", OpRead))
	if a.chain.version != 2 {
		t.Errorf("CreateAcls after the forgeries stored version %d, want 2", a.chain.version)
	}
	if err := later.Refresh(context.Background()); err != nil || later.Current().Len() != 2 {
		t.Errorf("another store reads %d bindings (%v), want 2", later.Current().Len(), err)
	}
	checkDecisions(t, later)
}

// Versions no writer makes are refused even when signed with the key:
// math.MaxInt64, which would overflow the next version and block every
// later change, zero, and one that skips versions.
func TestDISStoreRefusesImpossibleVersions(t *testing.T) {
	dis, a := startACLs(t)
	for _, v := range []int64{math.MaxInt64, maxVersion, 3, 0, -1} {
		appendRecord(t, dis, signed(t, testKey, v, time.Now(), attackerMayAll...))
	}
	if err := a.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, a)
	grant(t, a, allow(ResourceTopic, "payments", PatternLiteral, "User:bob", OpRead))
	grant(t, a, allow(ResourceTopic, "refunds", PatternLiteral, "User:bob", OpRead))
	if a.chain.version != 3 || a.Current().Len() != 3 {
		t.Errorf("after two CreateAcls: version %d with %d bindings, want 3 with 3", a.chain.version, a.Current().Len())
	}
	checkDecisions(t, a)

	// A stream whose first record is math.MaxInt64 holds no ACLs, and
	// the first change starts at version 1.
	if err := dis.DeleteStream(context.Background(), StreamName); err != nil {
		t.Fatal(err)
	}
	fresh := newStore(t, dis, testKey)
	if err := fresh.createStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendRecord(t, dis, signed(t, testKey, math.MaxInt64, time.Now(), attackerMayAll...))
	checkLost(t, fresh)
	grant(t, fresh, bobMayRead)
	if fresh.chain.version != 1 {
		t.Errorf("the first change over a stream holding only math.MaxInt64 stored version %d, want 1", fresh.chain.version)
	}
	checkDecisions(t, fresh)
}

// A signed snapshot with a binding CreateAcls would refuse is refused
// whole: none of its bindings is taken.
func TestDISStoreRefusesInvalidBindings(t *testing.T) {
	dis, a := startACLs(t)
	invalid := allow(ResourceAny, "orders", PatternLiteral, "User:ATTACKER", OpAll)
	appendRecord(t, dis, signed(t, testKey, 2, time.Now(), append(attackerMayAll, bobMayRead, invalid)...))
	if err := a.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, a)
	if a.chain.version != 1 || a.Current().Len() != 1 {
		t.Errorf("version %d with %d bindings, want version 1 with bob's", a.chain.version, a.Current().Len())
	}
}

// A deleted ACL stream, after the store took a version, or one made anew
// with no valid snapshot in it, is lost ACLs: only super users pass
// until a change writes a new set.
func TestDISStoreDeletedOrEmptiedStreamFailsClosed(t *testing.T) {
	ctx := context.Background()
	for _, junk := range []int{-1, 0, 1, 3} {
		t.Run(fmt.Sprintf("junk=%d", junk), func(t *testing.T) {
			dis, a := startACLs(t)
			grant(t, a, allow(ResourceTopic, "payments", PatternLiteral, "User:bob", OpRead))
			if err := dis.DeleteStream(ctx, StreamName); err != nil {
				t.Fatal(err)
			}
			if junk >= 0 {
				if err := a.createStream(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for range junk {
				appendRecord(t, dis, []byte(`{"version":9,"acls":[]}`))
			}
			checkLost(t, a)
			grant(t, a, bobMayRead)
			checkDecisions(t, a)
			if a.Current().Len() != 1 {
				t.Errorf("the change after the loss built on the lost set: %d bindings", a.Current().Len())
			}
		})
	}
}

// A signed snapshot appended again after the stream lost the newer ones
// (here: deleted and made anew) is taken while it could still be in the
// stream, and is lost ACLs once it was written longer ago than the
// stream keeps records. Only a change ends the loss, and it starts a new
// set rather than building on the replayed one.
func TestDISStoreReplayedSnapshotIsLost(t *testing.T) {
	ctx := context.Background()
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	if err := newStore(t, dis, testKey).createStream(ctx); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	appendRecord(t, dis, signed(t, testKey, 1, written, bobMayRead))
	for _, after := range []time.Duration{time.Hour, 71 * time.Hour} {
		s := newStore(t, dis, testKey)
		s.now = func() time.Time { return written.Add(after) }
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		checkDecisions(t, s)
	}
	s := newStore(t, dis, testKey)
	s.now = func() time.Time { return written.Add(80 * time.Hour) }
	checkLost(t, s)
	// Following the stream, the store does not write the lost set again
	// ahead of retention, which would end the loss.
	run, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	s.Run(run, 10*time.Millisecond)
	stop()
	checkLost(t, s)
	grant(t, s, allow(ResourceTopic, "payments", PatternLiteral, "User:bob", OpRead))
	if s.Current().Lost() || s.Current().Len() != 1 {
		t.Errorf("after the loss CreateAcls left lost %v, %d bindings; want the one created", s.Current().Lost(), s.Current().Len())
	}
}

// A store with another key takes nothing the others wrote: it sees the
// ACLs lost.
func TestDISStoreWithAnotherKeyTakesNothing(t *testing.T) {
	dis, _ := startACLs(t)
	other := newStore(t, dis, []byte("another gateway's ACL key"))
	checkLost(t, other)
	if other.chain.version != 0 {
		t.Errorf("took version %d", other.chain.version)
	}
}

func TestNewDISStoreRefusesNoKey(t *testing.T) {
	if _, err := NewDISStore(nil, zerolog.Nop(), 1<<20, nil); err == nil {
		t.Error("a store without a key was made")
	}
}

var testKey = []byte("the ACL key of the gateways under test")

func newStore(t *testing.T, dis disclient.API, key []byte) *DISStore {
	t.Helper()
	s, err := NewDISStore(dis, zerolog.Nop(), 1<<20, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signed is a record of version v holding bs, written at written and
// signed with key.
func signed(t *testing.T, key []byte, v int64, written time.Time, bs ...Binding) []byte {
	t.Helper()
	data, err := encodeSnapshot(key, v, written.UnixMilli(), NewSet(bs))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
