package plog

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// cursorRefreshAge reopens a DIS cursor before its 5-minute expiry, as
// Huawei's own adapter does after 270 s.
const cursorRefreshAge = 270 * time.Second

// cursor is where a partition's reads continue in DIS: the DIS cursor for
// sequence number seq, opened at, kept so that a sequential consumer costs
// one GetRecords per read and no GetCursor. Kafka-format and raw-format
// reads each keep one, guarded by their read lock.
type cursor struct {
	id  string // "" when none is open
	seq int64
	at  time.Time
	// stream is the stream read when it is not the partition's own: the
	// keep stream, for a generation's reader (kept.go). Its reads use the
	// keep stream's quota, so they are not counted in the partition's.
	stream string
}

// read reads records of ps from seq on, up to bytes, opening a new DIS
// cursor on a seek, near its expiry, or once more when DIS says it
// expired. With spans, a DIS that can leaves the rest of large records in
// its files (disclient.SpanGetter). It checks that DIS answered with
// consecutive records from seq on, and counts them in ps's meter.
func (c *cursor) read(ctx context.Context, ps *Partition, seq int64, bytes int, spans bool) ([]disclient.Record, error) {
	dis := ps.d.DIS
	stream := c.stream
	if stream == "" {
		stream = ps.key.Stream
	}
	for attempt := 0; ; attempt++ {
		if c.id == "" || c.seq != seq || time.Since(c.at) > cursorRefreshAge {
			r, err := dis.GetCursor(ctx, &disclient.GetCursorRequest{
				StreamName: stream, PartitionID: disclient.PartitionID(ps.key.Partition),
				CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(seq, 10),
			})
			if err != nil {
				c.id = ""
				if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) {
					return nil, errOutOfRange
				}
				return nil, err
			}
			c.id, c.seq, c.at = r.PartitionCursor, seq, time.Now()
		}
		var resp *disclient.GetRecordsResponse
		var err error
		if sg, ok := dis.(disclient.SpanGetter); ok && spans {
			resp, err = sg.GetRecordsSpans(ctx, c.id, bytes, protocol.BatchHeaderSize, spanMinBytes)
		} else {
			resp, err = dis.GetRecords(ctx, c.id, bytes)
		}
		if err != nil {
			c.id = ""
			switch {
			case disclient.IsCode(err, disclient.CodeCursorExpired) && attempt == 0:
				continue
			case disclient.IsCode(err, disclient.CodeCursorPositionGone):
				return nil, errOutOfRange
			}
			return nil, err
		}
		if c.stream == "" {
			ps.meter.read(resp.Records)
		}
		if n := len(resp.Records); n > 0 {
			first, err1 := strconv.ParseInt(resp.Records[0].SequenceNumber, 10, 64)
			last, err2 := strconv.ParseInt(resp.Records[n-1].SequenceNumber, 10, 64)
			if err1 != nil || err2 != nil || first != seq || last != seq+int64(n)-1 {
				c.id = ""
				return nil, errors.New("DIS returned records " + resp.Records[0].SequenceNumber + ".." +
					resp.Records[n-1].SequenceNumber + " for a cursor at " + strconv.FormatInt(seq, 10))
			}
		}
		c.id, c.seq = resp.NextPartitionCursor, seq+int64(len(resp.Records))
		return resp.Records, nil
	}
}
