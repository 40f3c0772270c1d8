package sharestate

import (
	"fmt"
	"time"
)

// Kafka's broker defaults (group.share.*, Apache Kafka 4.2), so a share
// group behaves on the gateway as it would on a broker.
const (
	defaultDeliveryCountLimit = 5
	defaultLockDuration       = 30 * time.Second
	defaultMaxLockDuration    = 60 * time.Second
	defaultMaxInFlight        = 2000
	// defaultUpdatesPerSnapshot is Kafka's
	// share.coordinator.snapshot.update.records.per.snapshot.
	defaultUpdatesPerSnapshot = 500
)

// The ranges Kafka accepts for the same settings; a value outside is a
// configuration mistake, refused rather than silently clamped.
const (
	minDeliveryCountLimit = 2
	maxDeliveryCountLimit = 10
	minLockDuration       = time.Second
	minMaxLockDuration    = 30 * time.Second
	maxMaxLockDuration    = time.Hour
	minMaxInFlight        = 100
	maxMaxInFlight        = 10000
)

// Config tunes one share-partition; zero values get Kafka's defaults.
type Config struct {
	// DeliveryCountLimit is group.share.delivery.count.limit (default 5,
	// 2 to 10): a record delivered this many times is archived instead of
	// made available again when it is released or its lock expires, so a
	// record that crashes its consumers cannot loop for ever.
	DeliveryCountLimit int
	// LockDuration is group.share.record.lock.duration.ms (default 30 s):
	// how long an acquired record stays with its member when the request
	// does not ask for another duration.
	LockDuration time.Duration
	// MaxLockDuration is group.share.max.record.lock.duration.ms (default
	// 60 s, 30 s to 1 h): the longest lock a request may ask for, so a
	// member that vanished holds records a bounded time.
	MaxLockDuration time.Duration
	// MaxInFlight is group.share.partition.max.record.locks (default 2000,
	// 100 to 10000): the records between SPSO and SPEO, acquired or not yet
	// done, beyond which nothing new is acquired. It bounds the state's
	// memory and the size of a snapshot.
	MaxInFlight int
	// UpdatesPerSnapshot makes every UpdatesPerSnapshot-th record a
	// snapshot (default 500, at least 1; 1 makes every record one), so a
	// recovery reads one snapshot and fewer updates than this after it.
	UpdatesPerSnapshot int
}

// withDefaults fills zero fields with Kafka's defaults.
func (c Config) withDefaults() Config {
	if c.DeliveryCountLimit == 0 {
		c.DeliveryCountLimit = defaultDeliveryCountLimit
	}
	if c.LockDuration == 0 {
		c.LockDuration = defaultLockDuration
	}
	if c.MaxLockDuration == 0 {
		c.MaxLockDuration = defaultMaxLockDuration
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = defaultMaxInFlight
	}
	if c.UpdatesPerSnapshot == 0 {
		c.UpdatesPerSnapshot = defaultUpdatesPerSnapshot
	}
	return c
}

// WithDefaults is c with Kafka's defaults in its zero fields: the values a
// share-partition runs with, which the gateway reports as broker configs.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// Validate reports the first setting outside what Kafka accepts, after
// defaults are applied, so a driver can refuse a bad flag at start rather
// than at a group's first fetch.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.DeliveryCountLimit < minDeliveryCountLimit || c.DeliveryCountLimit > maxDeliveryCountLimit:
		return fmt.Errorf("sharestate: delivery count limit %d outside [%d, %d]", c.DeliveryCountLimit, minDeliveryCountLimit, maxDeliveryCountLimit)
	case c.MaxLockDuration < minMaxLockDuration || c.MaxLockDuration > maxMaxLockDuration:
		return fmt.Errorf("sharestate: max lock duration %v outside [%v, %v]", c.MaxLockDuration, minMaxLockDuration, maxMaxLockDuration)
	case c.LockDuration < minLockDuration || c.LockDuration > c.MaxLockDuration:
		return fmt.Errorf("sharestate: lock duration %v outside [%v, max lock duration %v]", c.LockDuration, minLockDuration, c.MaxLockDuration)
	case c.MaxInFlight < minMaxInFlight || c.MaxInFlight > maxMaxInFlight:
		return fmt.Errorf("sharestate: max in-flight records %d outside [%d, %d]", c.MaxInFlight, minMaxInFlight, maxMaxInFlight)
	case c.UpdatesPerSnapshot < 1:
		return fmt.Errorf("sharestate: updates per snapshot %d below 1", c.UpdatesPerSnapshot)
	}
	return nil
}

// lockFor is the lock a request asking for d gets: the default for zero or
// less, at most MaxLockDuration.
func (c Config) lockFor(d time.Duration) time.Duration {
	if d <= 0 {
		return c.LockDuration
	}
	return min(d, c.MaxLockDuration)
}
