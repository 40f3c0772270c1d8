package metrics

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// A DIS outage makes one warning per operation and code, not one per call;
// answers that are part of normal serving are debug; a call its caller
// cancelled is no DIS error at all.
func TestDISErrorLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	l := newDISErrorLog(zerolog.New(&buf).Level(zerolog.DebugLevel))
	down := &disclient.Error{Status: 503, Code: disclient.CodeServiceUnavailable, Message: "unavailable"}
	for range 100 {
		l.note("PutRecords", down)
		l.note("GetRecords", down)
	}
	l.note("DescribeStream", &disclient.Error{Status: 400, Code: disclient.CodeStreamNotFound, Message: "no stream"})
	l.note("GetRecords", context.Canceled)
	l.note("ListStreams", errors.New("dial tcp: connection refused"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{
		`"level":"warn","operation":"PutRecords","dis_code":"DIS.5250"`,
		`"level":"warn","operation":"GetRecords","dis_code":"DIS.5250"`,
		`"level":"debug","operation":"DescribeStream","dis_code":"DIS.4301"`,
		`"level":"warn","operation":"ListStreams","dis_code":"error"`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %s, want %s", i, lines[i], want)
		}
	}
	l.mu.Lock()
	quiet := l.seen[disErrorKey{"PutRecords", disclient.CodeServiceUnavailable}].quiet
	l.mu.Unlock()
	if quiet != 99 {
		t.Errorf("%d PutRecords failures waiting for the next line, want 99", quiet)
	}
}
