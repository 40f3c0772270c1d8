package gateway

import (
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/plog"
)

// TestParseShareReset reads share.auto.offset.reset as Kafka does, its
// by_duration in java.time.Duration's ISO-8601 form.
func TestParseShareReset(t *testing.T) {
	for _, tc := range []struct {
		in    string
		reset plog.ShareReset
		d     time.Duration
		ok    bool
	}{
		{"latest", plog.ShareResetLatest, 0, true},
		{"EARLIEST", plog.ShareResetEarliest, 0, true},
		{"by_duration:PT1H", plog.ShareResetByDuration, time.Hour, true},
		{"by_duration:P1DT2H30M", plog.ShareResetByDuration, 26*time.Hour + 30*time.Minute, true},
		{"by_duration:pt0.5s", plog.ShareResetByDuration, 500 * time.Millisecond, true},
		{"by_duration:PT1H-30M", plog.ShareResetByDuration, 30 * time.Minute, true},
		{"by_duration:-PT-1S", plog.ShareResetByDuration, time.Second, true},
		{"by_duration:PT0S", plog.ShareResetByDuration, 0, true},
		{"by_duration:-PT1S", 0, 0, false},
		{"by_duration:P", 0, 0, false},
		{"by_duration:PT", 0, 0, false},
		{"by_duration:1H", 0, 0, false},
		{"by_duration:P1W", 0, 0, false},
		{"by_duration:PT99999999999999999999S", 0, 0, false},
		{"by_duration:", 0, 0, false},
		{"none", 0, 0, false},
	} {
		reset, d, err := parseShareReset(tc.in)
		if (err == nil) != tc.ok || tc.ok && (reset != tc.reset || d != tc.d) {
			t.Errorf("%q: %v %v %v, want %v %v ok=%v", tc.in, reset, d, err, tc.reset, tc.d, tc.ok)
		}
	}
}
