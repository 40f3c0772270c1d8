package disclient

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// PutRecords uploads records and answers one result per record, in request
// order, with FailedRecordCount counting the results that carry an error.
//
// PutRecords is not idempotent: DIS gives records no ids, so a request that
// reached DIS and is sent again is written twice. The whole request is
// therefore retried only when DIS surely wrote nothing: no connection could
// be opened, or DIS turned the request away with HTTP 429 or 503, DIS.4303
// (traffic control) or DIS.4305 (too many requests). Any other error,
// including HTTP 500 and a connection lost after the request was sent, is
// returned as it is; some of the records may have been written.
//
// When DIS answers but failed some records (HTTP 200, failed_record_count >
// 0), only the failed records with a retriable code (DIS.4303, DIS.5xxx) are
// sent again, with backoff (a steady short one when all were refused by
// traffic control, RetryPolicy.steadyBackoff), until they succeed,
// MaxAttempts sends are used or the next wait would pass ctx's deadline.
// Their results are merged back into the original positions; a record that
// still fails keeps its last result.
// Once DIS has answered the first request PutRecords returns no error: a
// resend that fails as a whole ends the resending, and the answer goes back
// with those records still failed, because the caller must learn about the
// records DIS did write.
func (c *Client) PutRecords(ctx context.Context, req *PutRecordsRequest) (*PutRecordsResponse, error) {
	if req == nil || (req.StreamName == "" && req.StreamID == "") {
		return nil, missing("PutRecords", "stream name")
	}
	resp, err := c.putRecordsOnce(ctx, req)
	if err != nil {
		return nil, err
	}
	var pending []int
	for attempt := 1; attempt < c.retry.MaxAttempts; attempt++ {
		pending = retriableFailures(resp.Records, pending[:0])
		if len(pending) == 0 {
			break
		}
		wait, ok := c.retry.wait(ctx, attempt, onlyTrafficControl(resp.Records, pending))
		if !ok {
			break
		}
		c.log.Debug().Str("stream", req.StreamName).Int("records", len(pending)).Int("attempt", attempt).Dur("backoff", wait).
			Msg("resending failed records")
		resend := &PutRecordsRequest{
			StreamName: req.StreamName,
			StreamID:   req.StreamID,
			Records:    make([]PutRecordsEntry, len(pending)),
		}
		for j, i := range pending {
			resend.Records[j] = req.Records[i]
		}
		again, err := c.putRecordsOnce(ctx, resend)
		if err != nil {
			c.log.Debug().Str("stream", req.StreamName).Int("records", len(pending)).Err(err).
				Msg("resending failed records failed; returning them as failed")
			break
		}
		for j, i := range pending {
			resp.Records[i] = again.Records[j]
		}
	}
	resp.FailedRecordCount = 0
	for i := range resp.Records {
		if resp.Records[i].ErrorCode != "" {
			resp.FailedRecordCount++
		}
	}
	return resp, nil
}

// putRecordsOnce sends one PutRecords request, retried only as far as no
// record can be written twice.
func (c *Client) putRecordsOnce(ctx context.Context, req *PutRecordsRequest) (*PutRecordsResponse, error) {
	const op = "PutRecords"
	out := new(PutRecordsResponse)
	err := c.do(ctx, &call{op: op, method: http.MethodPost, url: c.v2 + "/records", in: req, out: out, kind: writesRecords,
		protobuf: c.encoding == EncodingProtobuf})
	if err != nil {
		return nil, err
	}
	if len(out.Records) != len(req.Records) {
		return nil, fmt.Errorf("disclient: %s: %d results for %d records", op, len(out.Records), len(req.Records))
	}
	return out, nil
}

// retriableFailures appends to dst the indexes of the results that failed
// with a code worth resending: throttling and server-side failures, as the
// DIS Java SDK's records.retriable.error.code ("DIS.4303,DIS.5") decides.
func retriableFailures(results []PutRecordsResult, dst []int) []int {
	for i := range results {
		code := results[i].ErrorCode
		if code == CodeTrafficControl || strings.HasPrefix(code, "DIS.5") {
			dst = append(dst, i)
		}
	}
	return dst
}

// onlyTrafficControl reports whether every result at pending was refused
// by a partition's traffic control (DIS.4303), which a steady short wait
// serves better than a doubling one (RetryPolicy.steadyBackoff).
func onlyTrafficControl(results []PutRecordsResult, pending []int) bool {
	for _, i := range pending {
		if results[i].ErrorCode != CodeTrafficControl {
			return false
		}
	}
	return true
}

// GetCursor opens a cursor on a partition. CursorType "" leaves the server
// default (AT_SEQUENCE_NUMBER); the starting sequence number and timestamp
// are sent when set, the timestamp always for AT_TIMESTAMP.
func (c *Client) GetCursor(ctx context.Context, req *GetCursorRequest) (*GetCursorResponse, error) {
	const op = "GetCursor"
	switch {
	case req == nil || req.StreamName == "":
		return nil, missing(op, "stream name")
	case req.PartitionID == "":
		return nil, missing(op, "partition id")
	}
	// The cursor API spells its query names with hyphens.
	u := newURL(c.v2, "/cursors").
		param("stream-name", req.StreamName).
		param("partition-id", req.PartitionID).
		paramIf("cursor-type", req.CursorType).
		paramIf("starting-sequence-number", req.StartingSequenceNumber)
	if req.CursorType == CursorAtTimestamp || req.Timestamp != 0 {
		u.param("timestamp", strconv.FormatInt(req.Timestamp, 10))
	}
	out := new(GetCursorResponse)
	if err := c.do(ctx, &call{op: op, method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// GetRecords reads the records at cursor. An answer with no records still
// carries the cursor to poll next.
func (c *Client) GetRecords(ctx context.Context, cursor string, maxFetchBytes int) (*GetRecordsResponse, error) {
	const op = "GetRecords"
	if cursor == "" {
		return nil, missing(op, "cursor")
	}
	// partition-cursor with a hyphen, max_fetch_bytes with underscores: the
	// API mixes both.
	u := newURL(c.v2, "/records").param("partition-cursor", cursor).positive("max_fetch_bytes", maxFetchBytes)
	out := new(GetRecordsResponse)
	if err := c.do(ctx, &call{op: op, method: http.MethodGet, url: u.String(), out: out, protobuf: c.encoding == EncodingProtobuf}); err != nil {
		return nil, err
	}
	return out, nil
}
