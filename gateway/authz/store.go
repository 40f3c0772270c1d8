package authz

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Store is where the bindings live, shared by every gateway in front of
// the same DIS project. Decisions read Current, which never blocks; a
// change goes through Update, which is atomic against changes made
// through other gateways at the same time.
type Store interface {
	// Current is the set as last read or written.
	Current() *Set
	// Refresh reads the changes others made since the last read.
	Refresh(ctx context.Context) error
	// Update applies change to the newest set and stores the result; it
	// returns the set stored. change may run more than once when another
	// gateway changed the set meanwhile, each time on the newer set.
	Update(ctx context.Context, change func(*Set) (*Set, error)) (*Set, error)
	// Run follows the changes others make until ctx ends, refreshing
	// every interval.
	Run(ctx context.Context, interval time.Duration)
}

// snapshot is one stored version of the whole set. Versions are numbered:
// a writer stores version n+1 over the version n it read, and of two
// writers that both stored n+1 the one stored first wins, so a reader
// takes a record only when its version is newer than what it holds.
// Written is when the writer stored it (Unix milliseconds): signed with
// the rest, it tells a replayed old record from a fresh one.
type snapshot struct {
	Version  int64     `json:"version"`
	Written  int64     `json:"written_ms"`
	Bindings []Binding `json:"acls"`
}

// A stored record is recordMagic, the HMAC-SHA256 under the gateways' ACL
// key of recordMagic and the snapshot's JSON (in hex), a newline, and that
// JSON (docs/security.md, "Where ACLs live"). The MAC covers the magic too,
// so a later format cannot be passed off as this one.
const (
	recordMagic = "disgw-acls/1 "
	macHexLen   = 2 * sha256.Size
	headerLen   = len(recordMagic) + macHexLen + 1
)

// maxVersion bounds the versions a reader takes. Writers add one per
// change and one per rewrite every refreshAfter, so no real set gets near
// it, and a writer's version+1 never overflows.
const maxVersion = 1 << 62

// chain is a reader's view of the stored versions, fed the records of the
// store in order.
type chain struct {
	key     []byte
	version int64 // 0: none taken yet
	set     *Set
	// at is the store position of the record taken last, -1 for none;
	// mac its MAC, which tells whether the record now at that position is
	// still the one taken; stamp its signed write time in Unix
	// milliseconds.
	at    int64
	mac   []byte
	stamp int64
}

func newChain(key []byte) chain { return chain{key: key, set: NewSet(nil), at: -1} }

// errBadSnapshot marks a stored record that is no snapshot this store may
// take.
var errBadSnapshot = errors.New("authz: stored ACL record refused")

// feed takes the record at position at when it is the next version, and
// reports whether it did. A record that is not signed with the chain's
// key, does not decode, holds an impossible version or an invalid binding
// is refused whole with an error and changes nothing, so one bad record
// cannot block the versions after it. A version not newer than the one
// held lost a race or is older, and is passed over without an error.
func (c *chain) feed(at int64, data []byte) (bool, error) {
	mac, payload, err := c.open(data)
	if err != nil {
		return false, fmt.Errorf("%w at %d: %w", errBadSnapshot, at, err)
	}
	var s snapshot
	if err := json.Unmarshal(payload, &s); err != nil {
		return false, fmt.Errorf("%w at %d: %w", errBadSnapshot, at, err)
	}
	switch {
	case s.Version <= 0 || s.Version >= maxVersion:
		return false, fmt.Errorf("%w at %d: impossible version %d", errBadSnapshot, at, s.Version)
	case s.Version <= c.version:
		return false, nil
	case c.version > 0 && s.Version > c.version+1:
		return false, fmt.Errorf("%w at %d: version %d skips versions after %d", errBadSnapshot, at, s.Version, c.version)
	case s.Written <= 0:
		return false, fmt.Errorf("%w at %d: no write time", errBadSnapshot, at)
	}
	for i, b := range s.Bindings {
		if err := b.Validate(); err != nil {
			return false, fmt.Errorf("%w at %d: binding %d: %w", errBadSnapshot, at, i, err)
		}
	}
	c.version, c.set, c.at, c.mac, c.stamp = s.Version, NewSet(s.Bindings), at, mac, s.Written
	return true, nil
}

// open checks data's MAC and returns it with the payload it covers.
func (c *chain) open(data []byte) (mac, payload []byte, err error) {
	if len(data) < headerLen || !bytes.HasPrefix(data, []byte(recordMagic)) || data[headerLen-1] != '\n' {
		return nil, nil, errors.New("not a signed ACL snapshot (an unsigned one from an earlier disgw, or not written by disgw)")
	}
	mac = make([]byte, sha256.Size)
	if _, err := hex.Decode(mac, data[len(recordMagic):headerLen-1]); err != nil {
		return nil, nil, errors.New("malformed MAC")
	}
	if !hmac.Equal(mac, sign(c.key, data[headerLen:])) {
		return nil, nil, errors.New("the MAC does not verify: written with another ACL key, or tampered with")
	}
	return mac, data[headerLen:], nil
}

// holds reports whether data is the record the chain took last.
func (c *chain) holds(data []byte) bool {
	mac, _, err := c.open(data)
	return err == nil && hmac.Equal(mac, c.mac)
}

// sign is the MAC of a record holding payload.
func sign(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(recordMagic))
	h.Write(payload)
	return h.Sum(nil)
}

// encodeSnapshot is the record holding set as version, written at the
// Unix millisecond written, signed with key.
func encodeSnapshot(key []byte, version, written int64, set *Set) ([]byte, error) {
	bs := set.Bindings()
	if bs == nil {
		bs = []Binding{}
	}
	payload, err := json.Marshal(snapshot{Version: version, Written: written, Bindings: bs})
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, headerLen+len(payload))
	data = append(data, recordMagic...)
	data = hex.AppendEncode(data, sign(key, payload))
	data = append(data, '\n')
	return append(data, payload...), nil
}
