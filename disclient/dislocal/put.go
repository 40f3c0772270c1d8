package dislocal

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	json "github.com/goccy/go-json"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
)

// Record limits. DIS documents 1 MB of payload per record; it documents no
// per-request record count, so the embedded server allows many (the body
// size limit binds first for all but tiny records).
const (
	maxRecordBytes   = 1 << 20
	maxRecordsPerPut = 10000
)

// putRecords serves POST /records: it decodes the body in the encoding its
// Content-Type names, hands it to appendPut and encodes the answer the same
// way.
func (s *Server) putRecords(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.PutRecordsRequest
	protobuf := wantsProtobuf(r)
	release, err := decodePutRecords(w, r, protobuf, &req)
	if err != nil {
		return err
	}
	defer release()
	resp, durable, err := s.appendPut(project, &req)
	if err == nil {
		err = durable()
	}
	if err != nil {
		return err
	}
	return writePutRecords(w, protobuf, resp)
}

// appendPut appends the records of one PutRecords request, whichever way it
// arrived. With quotas enforced, records over their partition's write quota
// fail with DIS.4303 first (throttleWrites). Sequence numbers are assigned
// under the partition locks, and all records of the request go into one
// record log write and one pebble batch. It returns once they have their
// sequence numbers, with durable, which waits until they are as durable as
// the sync mode promises and makes them readable then (see appendRecords);
// the request is answered only after durable succeeded. The records' data
// is copied into the record log: req is not used after it returns.
func (s *Server) appendPut(project string, req *disclient.PutRecordsRequest) (resp *disclient.PutRecordsResponse, durable func() error, err error) {
	if len(req.Records) == 0 {
		return nil, nil, errorf(disclient.CodeEmptyRequest, "Empty request: no records.")
	}
	if len(req.Records) > maxRecordsPerPut {
		return nil, nil, errTooManyRecords(len(req.Records))
	}
	st, err := s.putTarget(project, req.StreamName, req.StreamID)
	if err != nil {
		return nil, nil, err
	}
	defer st.mu.RUnlock()

	resp = &disclient.PutRecordsResponse{Records: make([]disclient.PutRecordsResult, len(req.Records))}
	targets := make([]int32, len(req.Records))
	var touched []int32
	size := 0
	for i := range req.Records {
		rec := &req.Records[i]
		n, aerr := checkRecord(st, rec)
		if aerr != nil {
			targets[i] = -1
			resp.Records[i] = disclient.PutRecordsResult{ErrorCode: aerr.code, ErrorMessage: aerr.message}
			resp.FailedRecordCount++
			continue
		}
		targets[i] = n
		size += recordlog.FrameLen(rec.PartitionKey, rec.Data)
	}
	if s.quotaEnforced() {
		resp.FailedRecordCount += s.throttleWrites(st, req.Records, targets, resp.Records)
	}
	for _, n := range targets {
		if n >= 0 {
			touched = append(touched, n)
		}
	}
	if len(touched) == 0 {
		return resp, durableNow, nil
	}
	slices.Sort(touched)
	touched = slices.Compact(touched)
	if durable, err = s.appendRecords(st, req.Records, targets, touched, size, resp.Records); err != nil {
		return nil, nil, err
	}
	return resp, durable, nil
}

// durableNow is the durable of an append that has nothing left to wait for.
func durableNow() error { return nil }

// errTooManyRecords refuses a PutRecords request of n records.
func errTooManyRecords(n int) error {
	return errorf(disclient.CodeInvalidRequest, "Too many records. [%d] at most %d per request.", n, maxRecordsPerPut)
}

// decodePutRecordsJSON reads a JSON PutRecords body record by record, so
// that a body holding more records than one call may carry is refused at
// the first record past the limit, before the rest is decoded. The body
// is read through the same size limit as every PutRecords body.
func decodePutRecordsJSON(w http.ResponseWriter, r *http.Request, req *disclient.PutRecordsRequest) error {
	body := &limitedBody{r: http.MaxBytesReader(w, r.Body, maxPutBodyBytes)}
	dec := json.NewDecoder(body)
	if err := expectDelim(dec, '{'); err != nil {
		if errors.Is(err, io.EOF) && dec.InputOffset() == 0 {
			return errorf(disclient.CodeEmptyRequest, "Empty request.")
		}
		return body.error(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return body.error(err)
		}
		switch tok {
		case "stream_name":
			err = dec.Decode(&req.StreamName)
		case "stream_id":
			err = dec.Decode(&req.StreamID)
		case "records":
			err = decodeRecordsJSON(dec, req)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return body.error(err)
		}
	}
	return body.error(expectDelim(dec, '}'))
}

// limitedBody remembers why reading a request body failed, since a JSON
// decoder reports a body cut off by the size limit as truncated JSON.
type limitedBody struct {
	r   io.Reader
	err error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// error turns a failure to decode the body into the DIS error: an API
// error as it is, a body over the size limit or bad or truncated JSON as
// DIS.4200.
func (b *limitedBody) error(err error) error {
	var ae *apiError
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.As(b.err, &tooLarge):
		return errorf(disclient.CodeInvalidRequest, "Request body exceeds %d bytes.", maxPutBodyBytes)
	default:
		return errorf(disclient.CodeInvalidRequest, "Invalid request body. [%v]", err)
	}
}

// decodeRecordsJSON reads the records array (or null) of a JSON PutRecords
// body, refusing more than maxRecordsPerPut.
func decodeRecordsJSON(dec *json.Decoder, req *disclient.PutRecordsRequest) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("records: want an array, got %v", tok)
	}
	for dec.More() {
		if len(req.Records) == maxRecordsPerPut {
			return errTooManyRecords(maxRecordsPerPut + 1)
		}
		var e disclient.PutRecordsEntry
		if err := dec.Decode(&e); err != nil {
			return err
		}
		req.Records = append(req.Records, e)
	}
	return expectDelim(dec, ']')
}

// expectDelim reads the next token and checks it is d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %v, got %v", d, tok)
	}
	return nil
}

// putTarget finds and read-locks the stream of a PutRecords request, by
// name or, failing that, by stream_id.
func (s *Server) putTarget(project, name, id string) (*stream, error) {
	if name == "" && id != "" {
		if name = s.streamNameByID(project, id); name == "" {
			return nil, errStreamNotFound(id)
		}
	}
	if name == "" {
		return nil, errorf(disclient.CodeInvalidRequest, "stream_name is required.")
	}
	return s.readStream(project, name)
}

// checkRecord validates one record and picks its partition.
func checkRecord(st *stream, rec *disclient.PutRecordsEntry) (int32, *apiError) {
	if len(rec.Data) > maxRecordBytes {
		return 0, errorf(disclient.CodeInvalidRequest, "Record data is too large. [%d] bytes, at most %d.", len(rec.Data), maxRecordBytes)
	}
	if rec.Timestamp != nil && *rec.Timestamp < 0 {
		return 0, errorf(disclient.CodeInvalidRequest, "Invalid timestamp. [%d] must not be negative.", *rec.Timestamp)
	}
	return st.route(rec)
}

// appendRecords writes the routed records (targets[i] >= 0) of one request
// and fills in their results. touched lists the partitions involved,
// sorted, which is also the order they are locked in. frameBytes is the
// size of the records' log frames each in a frame of its own, which runs
// only make smaller. Needs st.mu.
//
// The records' frames go to the record log in one write and their
// references into one pebble batch, applied under the log's lock and the
// partition locks, so that log order, sequence numbers and pebble's WAL
// order agree. The record log is the one durable copy: pebble's batch is
// never fsynced here. With SyncAlways the returned durable waits for the
// log's fsync alone, outside the locks so that concurrent writers share it,
// and only then makes the records readable; the partitions' next sequence
// numbers move on at once, so a caller may append again before durable
// returns (a pipelined writer, LocalClient) and one fsync covers both.
// When the store is opened, references whose frames did not reach the
// disk (a power loss; never acknowledged) are dropped (recoverLog), and
// frames whose references did not are indexed again (reindexLog).
func (s *Server) appendRecords(st *stream, recs []disclient.PutRecordsEntry, targets, touched []int32, frameBytes int, results []disclient.PutRecordsResult) (durable func() error, err error) {
	parts := make([]*partition, len(touched))
	states := make([]partitionState, len(touched))
	for j, n := range touched {
		parts[j] = st.parts[n]
		parts[j].mu.Lock()
		states[j] = parts[j].state
	}
	defer func() {
		for _, p := range parts {
			p.mu.Unlock()
		}
	}()

	now := s.nowMs()
	second := floorDiv(now, 1000)
	skey := st.meta.Key
	bufp := responseBuffers.Get().(*[]byte)
	frames := slices.Grow((*bufp)[:0], frameBytes)
	defer func() {
		*bufp = frames
		recycleBuffer(bufp)
	}()
	// Each routed record's sequence number and timestamp, by index.
	seqs := make([]int64, len(recs))
	stamps := make([]int64, len(recs))
	// The indexes of each touched partition's records, in order.
	byPart := make([][]int, len(touched))
	var key [indexKeyLen]byte
	b := s.db.NewBatchWithSize(len(touched)*(partitionPrefixLen+partitionStateLen) + len(recs)*(recordKeyLen+recordlog.MemberRefLen+recordlog.MemberHeadLen+2*indexKeyLen))
	defer b.Close()
	for i := range recs {
		n := targets[i]
		if n < 0 {
			continue
		}
		j, _ := slices.BinarySearch(touched, n)
		ps := &states[j]
		seq := ps.next
		ps.next++
		rec := &recs[i]
		ts := now
		if rec.Timestamp != nil {
			ts = *rec.Timestamp
		}
		seqs[i], stamps[i] = seq, ts
		byPart[j] = append(byPart[j], i)
		if err := ps.indexRecord(b, skey, n, seq, ts, second); err != nil {
			return nil, err
		}
		results[i] = disclient.PutRecordsResult{PartitionID: parts[j].id, SequenceNumber: strconv.FormatInt(seq, 10)}
	}
	// The frames, a partition at a time: its records in one run frame
	// when they may go in one (recordlog's runframe.go), else a frame each. refs are
	// the records' references relative to where the frames will start.
	refs := make([]recordlog.Ref, len(recs))
	var run []recordlog.RunRecord
	for j, n := range touched {
		members := byPart[j]
		runnable := true
		for _, i := range members {
			runnable = runnable && recordlog.InRun(recs[i].PartitionKey)
		}
		if runnable {
			run = run[:0]
			for _, i := range members {
				run = append(run, recordlog.RunRecord{TS: stamps[i], Data: recs[i].Data})
			}
			frames = recordlog.AppendRunFrame(frames, skey, n, seqs[members[0]], run)
			for k, i := range members {
				refs[i] = recordlog.Ref{Off: int64(run[k].Off), N: uint32(len(run[k].Data)), Member: true, TS: run[k].TS, CRC: run[k].CRC, Head: recordlog.MemberHead(run[k].Data)}
			}
			continue
		}
		for _, i := range members {
			off := len(frames)
			frames = recordlog.AppendFrame(frames, skey, n, seqs[i], stamps[i], recs[i].PartitionKey, recs[i].Data)
			refs[i] = recordlog.Ref{Off: int64(off), N: uint32(len(frames) - off)}
		}
	}
	index := func(seg uint64, base int64) error {
		var enc [recordlog.MemberRefLen + recordlog.MemberHeadLen]byte
		for i := range recs {
			n := targets[i]
			if n < 0 {
				continue
			}
			r := refs[i]
			r.Seg, r.Off = seg, base+r.Off
			if err := b.Set(appendRecordKey(key[:0], skey, n, seqs[i]), r.Encode(enc[:0]), nil); err != nil {
				return err
			}
		}
		for j, n := range touched {
			if err := b.Set(partitionKey(skey, n), states[j].encode(), nil); err != nil {
				return err
			}
		}
		if err := b.Set(logPositionKey, encodeLogPosition(seg, base+int64(len(frames))), nil); err != nil {
			return err
		}
		// Never an fsync of its own: the record log is the durable copy,
		// from which reindexLog rebuilds what pebble lost in a power loss.
		return s.db.Apply(b, pebble.NoSync)
	}
	seg, base, err := s.records.Append(frames, index)
	if err != nil {
		return nil, err
	}
	for j, p := range parts {
		p.state = states[j]
	}
	if s.cfg.Sync == SyncNone {
		for j, p := range parts {
			p.visible = states[j].next
		}
		return durableNow, nil
	}
	end := base + int64(len(frames))
	return func() error {
		if err := s.records.Sync(seg, end); err != nil {
			return err
		}
		// A finished sync covers every batch before this one too, so
		// visible only ever moves forward.
		for j, p := range parts {
			p.mu.Lock()
			p.visible = max(p.visible, states[j].next)
			p.mu.Unlock()
		}
		return nil
	}, nil
}

// floorDiv divides rounding towards negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
