package sharestate

import (
	"testing"
	"time"
)

// TestConfig: zero is Kafka's defaults; each setting outside what Kafka
// accepts is refused.
func TestConfig(t *testing.T) {
	d := Config{}.WithDefaults()
	if want := (Config{5, 30 * time.Second, 60 * time.Second, 2000, 500}); d != want {
		t.Fatalf("defaults %+v, want %+v", d, want)
	}
	for _, c := range []Config{{}, {DeliveryCountLimit: 2, LockDuration: time.Second, MaxLockDuration: 30 * time.Second, MaxInFlight: 100, UpdatesPerSnapshot: 1}, {DeliveryCountLimit: 10, LockDuration: time.Hour, MaxLockDuration: time.Hour, MaxInFlight: 10000}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []Config{
		{DeliveryCountLimit: 1}, {DeliveryCountLimit: 11}, {DeliveryCountLimit: -1},
		{LockDuration: time.Millisecond}, {LockDuration: 61 * time.Second},
		{MaxLockDuration: 29 * time.Second, LockDuration: time.Second}, {MaxLockDuration: 2 * time.Hour},
		{MaxInFlight: 99}, {MaxInFlight: 10001},
		{UpdatesPerSnapshot: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
