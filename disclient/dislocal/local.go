package dislocal

import (
	"context"
	"fmt"
	"strconv"

	"github.com/disgw/disgw/disclient"
)

// LocalClient returns a disclient.API for project that serves PutRecords,
// GetCursor and GetRecords by calling s in process, and hands every other
// operation to http, a client of s's REST API. The three calls are the
// whole record traffic of a gateway; in process they skip encoding the
// bodies, the loopback HTTP exchange and decoding them again, and
// GetRecords reads the record log into the answer's own memory instead of
// copying each record out of a decoded body. Admin, app and checkpoint
// calls are few and keep the REST path.
//
// The answers are those HTTP gives: the same records, cursors and sequence
// numbers, and a failure as the same *disclient.Error (Status, Code,
// Message) that http would decode, the same validation, quotas and
// durability included; a request http refuses before sending (a missing
// stream name or cursor) goes to http, so the error is its own. Two things
// differ, both deliberately:
//
//   - No retries. http resends throttled and failed calls with backoff;
//     the local client answers at once, so traffic control (DIS.4303,
//     per record or for a whole GetRecords) reaches the gateway, whose
//     writer resends a throttled tail itself and whose fetch reports
//     throttling to the Kafka client. The embedded server's other
//     failures (DIS.5000: a disk error, a closed server) do not heal in
//     the milliseconds a retry waits.
//   - No authentication. The client is trusted code in the server's own
//     process, for the gateway's own tenant only: it signs nothing and is
//     served even when the server requires signatures (Config.Credentials).
//     Tenants with their own credentials must keep using the REST API.
//
// ctx is honoured before any work is done; once an operation has started
// it runs to its end, as a request the server has received does. A read
// costs the partition's read quota its records' key and data bytes (over
// HTTP: the encoded body). PutRecords uses req only until it returns.
func (s *Server) LocalClient(project string, http disclient.API) disclient.API {
	return &localClient{API: http, s: s, project: project}
}

// localClient is LocalClient's API; the embedded API serves the other
// operations.
type localClient struct {
	disclient.API
	s       *Server
	project string
}

func (c *localClient) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	resp, wait, err := c.PutRecordsPipelined(ctx, req)
	if err == nil {
		err = wait()
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// PutRecordsPipelined answers once the records have their sequence
// numbers; wait returns when they are durable and readable (appendPut).
func (c *localClient) PutRecordsPipelined(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, func() error, error) {
	const op = "PutRecords"
	if req == nil || (req.StreamName == "" && req.StreamID == "") {
		resp, err := c.API.PutRecords(ctx, req)
		return resp, durableNow, err
	}
	var resp *disclient.PutRecordsResponse
	var durable func() error
	err := c.serve(ctx, op, func() error {
		if err := checkPutSize(req); err != nil {
			return err
		}
		var err error
		resp, durable, err = c.s.appendPut(c.project, req)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	// The wait is served like a call of its own: refused once the server
	// is closed, a failed fsync answered as the DIS error it is.
	return resp, func() error { return c.serve(context.Background(), op, durable) }, nil
}

func (c *localClient) GetCursor(ctx context.Context, req *disclient.GetCursorRequest) (*disclient.GetCursorResponse, error) {
	const op = "GetCursor"
	if req == nil || req.StreamName == "" || req.PartitionID == "" {
		return c.API.GetCursor(ctx, req)
	}
	// The query the HTTP client would send.
	q := cursorQuery{
		stream:     req.StreamName,
		partition:  req.PartitionID,
		cursorType: req.CursorType,
		sequence:   req.StartingSequenceNumber,
	}
	if req.CursorType == disclient.CursorAtTimestamp || req.Timestamp != 0 {
		q.timestamp = strconv.FormatInt(req.Timestamp, 10)
	}
	var resp *disclient.GetCursorResponse
	err := c.serve(ctx, op, func() error {
		cur, err := c.s.openCursor(c.project, &q)
		if err == nil {
			resp = &disclient.GetCursorResponse{PartitionCursor: cur}
		}
		return err
	})
	return resp, err
}

func (c *localClient) GetRecords(ctx context.Context, cursor string, maxFetchBytes int) (*disclient.GetRecordsResponse, error) {
	return c.getRecords(ctx, cursor, maxFetchBytes, readOpts{fresh: true})
}

// GetRecordsSpans is GetRecords that leaves the data of records of more
// than spanMin bytes in the record log after their first head bytes
// (disclient.SpanGetter).
func (c *localClient) GetRecordsSpans(ctx context.Context, cursor string, maxFetchBytes, head, spanMin int) (*disclient.GetRecordsResponse, error) {
	return c.getRecords(ctx, cursor, maxFetchBytes, readOpts{fresh: true, spanMin: max(spanMin, 0), head: max(head, 0)})
}

func (c *localClient) getRecords(ctx context.Context, cursor string, maxFetchBytes int, opts readOpts) (*disclient.GetRecordsResponse, error) {
	const op = "GetRecords"
	if cursor == "" {
		return c.API.GetRecords(ctx, cursor, maxFetchBytes)
	}
	var resp *disclient.GetRecordsResponse
	err := c.serve(ctx, op, func() error {
		cur, pos, now, err := c.s.readCursor(cursor)
		if err != nil {
			return err
		}
		var a recordsAnswer
		next, err := c.s.readRecords(c.project, cur, pos, now, defaultFetchLimit, fetchBytesFor(maxFetchBytes), opts, &a)
		if err == nil {
			resp = &disclient.GetRecordsResponse{Records: a.records, NextPartitionCursor: next}
		}
		return err
	})
	return resp, err
}

// serve runs one operation as ServeHTTP and the route would: not after
// ctx is done, refused once the server is closed or for an invalid
// project, and with a failure turned into the *disclient.Error the HTTP
// client decodes from the error body.
func (c *localClient) serve(ctx context.Context, op string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("disclient: %s: %w", op, err)
	}
	s := c.s
	s.life.RLock()
	defer s.life.RUnlock()
	var err error
	if s.closed {
		err = errorf(disclient.CodeSystemError, "Server is closed.")
	} else if err = checkProject(c.project); err == nil {
		err = fn()
	}
	if err == nil {
		return nil
	}
	ae := answerFor(err)
	if ae.status >= 500 {
		s.log.Error().Err(err).Str("op", op).Str("code", ae.code).Msg("dislocal: local call failed")
	}
	return &disclient.Error{Status: ae.status, Code: ae.code, Message: ae.message}
}

// checkPutSize holds an in-process PutRecords request to the limit its
// HTTP body would be held to, counting what a protobuf body carries of
// each record: its data and keys, without the framing.
func checkPutSize(req *disclient.PutRecordsRequest) error {
	n := len(req.StreamName) + len(req.StreamID)
	for i := range req.Records {
		r := &req.Records[i]
		n += len(r.Data) + len(r.PartitionKey) + len(r.ExplicitHashKey) + len(r.PartitionID)
	}
	if n > maxPutBodyBytes {
		return errorf(disclient.CodeInvalidRequest, "Request body exceeds %d bytes.", maxPutBodyBytes)
	}
	return nil
}

// recordsAnswer collects the records of a GetRecords answer read fresh:
// their data aliases buffers no one else uses, capped so that an append to
// one cannot overwrite the next.
type recordsAnswer struct {
	records []disclient.Record
}

func (a *recordsAnswer) grow(n int) { a.records = make([]disclient.Record, 0, n) }

func (a *recordsAnswer) add(key []byte, seq int64, data []byte, rest disclient.FileSpan, ts int64) int {
	a.records = append(a.records, disclient.Record{
		PartitionKey:   string(key),
		SequenceNumber: strconv.FormatInt(seq, 10),
		Data:           data[:len(data):len(data)],
		Timestamp:      ts,
		TimestampType:  timestampTypeCreateTime,
		Rest:           rest,
	})
	return len(key) + len(data) + rest.Len
}
