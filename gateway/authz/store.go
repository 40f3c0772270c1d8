package authz

import (
	"context"
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
type snapshot struct {
	Version  int64     `json:"version"`
	Bindings []Binding `json:"acls"`
}

// chain is a reader's view of the stored versions, fed the records of the
// store in order.
type chain struct {
	version int64 // 0: none taken yet
	set     *Set
	// at is the store position of the record taken last, -1 for none;
	// stamp its write time in Unix milliseconds.
	at    int64
	stamp int64
}

func newChain() chain { return chain{set: NewSet(nil), at: -1} }

// errBadSnapshot marks a stored record that is no snapshot.
var errBadSnapshot = errors.New("authz: stored ACL record is not a snapshot")

// feed takes the record at position at, written at stamp, when it is a
// newer version, and reports whether it did. A record that does not
// decode is skipped with an error, so one bad record cannot block the
// versions after it.
func (c *chain) feed(at, stamp int64, data []byte) (bool, error) {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil || s.Version <= 0 {
		return false, fmt.Errorf("%w at %d", errBadSnapshot, at)
	}
	if s.Version <= c.version {
		return false, nil
	}
	c.version, c.set, c.at, c.stamp = s.Version, NewSet(s.Bindings), at, stamp
	return true, nil
}

// encodeSnapshot is the record holding set as version.
func encodeSnapshot(version int64, set *Set) ([]byte, error) {
	bs := set.Bindings()
	if bs == nil {
		bs = []Binding{}
	}
	return json.Marshal(snapshot{Version: version, Bindings: bs})
}
