package dislocal

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
)

// GetRecords limits. DIS documents neither a default nor a maximum for
// max_fetch_bytes; these keep one answer's memory bounded.
const (
	defaultFetchBytes = 4 << 20
	maxFetchBytes     = 32 << 20
	defaultFetchLimit = 1000
	maxFetchLimit     = 10000
	// maxPooledBuffer keeps rare huge answers from staying in the pool.
	maxPooledBuffer = 8 << 20
)

// responseBuffers recycles the bodies built or read by hand: GetRecords
// answers and protobuf PutRecords bodies.
var responseBuffers = sync.Pool{New: func() any { return new([]byte) }}

// getRecords serves GET /records. The records are encoded straight into
// the answer body, as JSON or protobuf, from the buffer they are read into.
func (s *Server) getRecords(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	c, pos, now, err := s.readCursor(q.Get("partition-cursor"))
	if err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", defaultFetchLimit, 1, maxFetchLimit)
	if err != nil {
		return err
	}
	fetchBytes := defaultFetchBytes
	if v := q.Get("max_fetch_bytes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errorf(disclient.CodeInvalidRequest, "Invalid max_fetch_bytes. [%s]", v)
		}
		fetchBytes = fetchBytesFor(n)
	}

	bufp := responseBuffers.Get().(*[]byte)
	body := bodyAnswer{out: (*bufp)[:0], protobuf: wantsProtobuf(r)}
	if !body.protobuf {
		body.out = append(body.out, `{"records":[`...)
	}
	defer func() {
		*bufp = body.out
		recycleBuffer(bufp)
	}()
	nextCursor, err := s.readRecords(project, c, pos, now, limit, fetchBytes, readOpts{}, &body)
	if err != nil {
		return err
	}
	if body.protobuf {
		body.out = disclient.AppendGetRecordsCursor(body.out, nextCursor)
		writeBody(w, disclient.ContentTypeProtobuf, body.out)
		return nil
	}
	body.out = append(body.out, `],"next_partition_cursor":"`...)
	body.out = append(body.out, nextCursor...)
	body.out = append(body.out, `"}`...)
	writeBody(w, "application/json", body.out)
	return nil
}

// fetchBytesFor is the max_fetch_bytes a GetRecords request gets: the
// default for none (n <= 0), else n up to maxFetchBytes.
func fetchBytesFor(n int) int {
	if n <= 0 {
		return defaultFetchBytes
	}
	return min(n, maxFetchBytes)
}

// readCursor decodes the cursor of a GetRecords request and refuses one
// older than CursorTTL. It returns the cursor, its position and the time
// now, which the next cursor carries.
func (s *Server) readCursor(text string) (*cursor, int64, int64, error) {
	c, pos, err := decodeCursor(text)
	if err != nil {
		return nil, 0, 0, err
	}
	now := s.nowMs()
	if now-c.GenerateTimestamp > s.cfg.CursorTTL.Milliseconds() {
		return nil, 0, 0, errorf(disclient.CodeCursorExpired, "Partition cursor has expired.")
	}
	return c, pos, now, nil
}

// answerWriter receives the records of a GetRecords answer in order.
type answerWriter interface {
	// grow is told, before the first record, how many records may follow.
	grow(n int)
	// add takes one record, its data being data followed by rest (empty
	// unless the read left data in the log, readOpts), and returns what
	// it costs against the partition's read quota. key and data alias
	// the read buffer: they are valid after add returns only when the
	// read was fresh.
	add(key []byte, seq int64, data []byte, rest disclient.FileSpan, ts int64) int
}

// readOpts says how readRecords reads the record log.
type readOpts struct {
	// fresh reads records into memory of their own that the answer may
	// keep (recordlog.Reader); otherwise through one reused buffer.
	fresh bool
	// With fresh and spanMin > 0, a record of more than spanMin bytes of
	// data is read only up to its first head bytes of data; the rest is
	// left in the log, handed over as a span of its segment
	// (disclient.SpanGetter).
	spanMin, head int
}

// readRecords reads from the cursor c, at position pos, up to limit records
// or fetchBytes of key and data into a, and returns the cursor to read
// next. As DIS does, it never returns a record whose key and data are
// larger than fetchBytes: a reader asking for less than the next record
// gets no records and the same position back, so a reader must ask for at
// least the largest record it may meet. opts says how the record log is
// read.
func (s *Server) readRecords(project string, c *cursor, pos, now int64, limit, fetchBytes int, opts readOpts, a answerWriter) (string, error) {
	st, err := s.readStream(project, c.Param.StreamName)
	if err != nil {
		return "", err
	}
	defer st.mu.RUnlock()
	n, err := disclient.ParsePartitionID(c.Param.PartitionID)
	if err != nil {
		return "", errorf(disclient.CodeInvalidCursor, "Invalid partition-cursor.")
	}
	if int(n) >= len(st.parts) {
		return "", errPartitionNotFound(disclient.PartitionID(n))
	}
	part := st.parts[n]
	limits := limitsFor(st.meta.StreamType)
	if s.quotaEnforced() && !part.quota.admitRead(s.cfg.Now(), limits) {
		return "", errReadThrottled(part)
	}
	earliest, visible := part.bounds()
	if pos < earliest {
		return "", errPositionGone(pos, earliest)
	}
	if pos > visible {
		return "", outOfRange(pos, earliest, visible)
	}

	next := pos
	if pos < visible {
		var cost int
		next, cost, err = s.readAnswerRecords(st.meta.Key, n, pos, visible, limit, fetchBytes, opts, a)
		if errors.Is(err, recordlog.ErrSegmentGone) {
			earliest, _ := part.bounds()
			return "", errPositionGone(pos, earliest)
		}
		if err != nil {
			return "", err
		}
		if s.quotaEnforced() {
			part.quota.chargeRead(cost)
		}
	}
	c.Param.CursorType = disclient.CursorAtSequenceNumber
	c.Param.StartingSequenceNumber = strconv.FormatInt(next, 10)
	c.GenerateTimestamp = now
	return encodeCursor(c)
}

func errPositionGone(pos, earliest int64) *apiError {
	return errorf(disclient.CodeCursorPositionGone, "The partition-cursor position has expired. [%d] is before the earliest record [%d]", pos, earliest)
}

// bodyAnswer encodes the records of a GetRecords answer into an HTTP body,
// as protobuf Record fields or as JSON objects of disclient.Record's shape,
// without per-record allocations. A record costs its encoded bytes.
type bodyAnswer struct {
	out      []byte
	protobuf bool
	records  int
}

func (b *bodyAnswer) grow(int) {}

// add never gets a rest: HTTP answers read the whole data.
func (b *bodyAnswer) add(key []byte, seq int64, data []byte, _ disclient.FileSpan, ts int64) int {
	start := len(b.out)
	if b.protobuf {
		b.out = disclient.AppendGetRecordsRecord(b.out, key, seq, data, ts, timestampTypeCreateTime)
	} else {
		if b.records > 0 {
			b.out = append(b.out, ',')
		}
		b.out = appendRecordJSON(b.out, key, seq, data, ts)
	}
	b.records++
	return len(b.out) - start
}

// readAnswerRecords hands the records [pos, visible) of a partition to a,
// stopping at limit records or before the record that would take the key
// and data handed over past fetchBytes, the first record included. It returns the position after the last
// record handed over and the read quota they cost. Records are read from
// the record log as opts says (recordlog.Reader).
func (s *Server) readAnswerRecords(skey uint64, n int32, pos, visible int64, limit, fetchBytes int, opts readOpts, a answerWriter) (int64, int, error) {
	var lower, upper [recordKeyLen]byte
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: appendRecordKey(lower[:0], skey, n, pos),
		UpperBound: appendRecordKey(upper[:0], skey, n, visible),
	})
	if err != nil {
		return pos, 0, err
	}
	// First the references, then the frames: frames that lie one after
	// the other in the log (a request's records of one partition) are read
	// with one read between them.
	var refs []recordlog.Ref
	var heads []byte // the copies of the references' heads
	total := 0
	for ok := it.First(); ok && len(refs) < limit && (len(refs) == 0 || total < fetchBytes); ok = it.Next() {
		seq, valid := recordSeq(it.Key())
		if !valid || seq != pos+int64(len(refs)) {
			if len(refs) == 0 && valid {
				// Retention removed the position after bounds were read.
				_ = it.Close()
				return pos, 0, errPositionGone(pos, seq)
			}
			err = errors.New("corrupt record key")
			break
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = verr
			break
		}
		ref, valid := recordlog.DecodeRef(v)
		if !valid {
			err = errors.New("corrupt record reference")
			break
		}
		if len(ref.Head) > 0 {
			// v is the iterator's until it moves on.
			if cap(heads)-len(heads) < len(ref.Head) {
				heads = make([]byte, 0, recordlog.HeadsPiece)
			}
			heads = append(heads, ref.Head...)
			ref.Head = heads[len(heads)-len(ref.Head) : len(heads) : len(heads)]
		}
		refs = append(refs, ref)
		total += ref.DataLen()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pos, 0, err
	}

	lr := recordlog.Reader{Log: s.records, Fresh: opts.fresh}
	if opts.fresh {
		lr.SpanMin, lr.Head = opts.spanMin, opts.head
	} else {
		bufp := responseBuffers.Get().(*[]byte)
		lr.Buf = (*bufp)[:0]
		defer func() {
			*bufp = lr.Buf
			recycleBuffer(bufp)
		}()
	}
	a.grow(len(refs))
	next := pos
	size, cost := 0, 0
	for i := range refs {
		seq := pos + int64(i)
		rec, err := lr.Read(refs[i:], skey, n, seq)
		if errors.Is(err, recordlog.ErrSegmentGone) {
			// Retention deleted the segment after the references were read.
			if i == 0 {
				return pos, 0, err
			}
			return next, cost, nil
		}
		if err != nil {
			return next, cost, err
		}
		if size+len(rec.Key)+len(rec.Data)+rec.Rest.Len > fetchBytes {
			break
		}
		size += len(rec.Key) + len(rec.Data) + rec.Rest.Len
		cost += a.add(rec.Key, seq, rec.Data, rec.Rest, rec.TS)
		next = seq + 1
	}
	return next, cost, nil
}

// appendRecordJSON appends one record as a JSON object.
func appendRecordJSON(out, key []byte, seq int64, data []byte, ts int64) []byte {
	out = append(out, '{')
	if len(key) > 0 {
		out = append(out, `"partition_key":`...)
		out = appendJSONString(out, key)
		out = append(out, ',')
	}
	out = append(out, `"sequence_number":"`...)
	out = strconv.AppendInt(out, seq, 10)
	out = append(out, `","data":"`...)
	out = base64.StdEncoding.AppendEncode(out, data)
	out = append(out, `","timestamp":`...)
	out = strconv.AppendInt(out, ts, 10)
	return append(out, `,"timestamp_type":"`+timestampTypeCreateTime+`"}`...)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendJSONString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out = append(out, '\\', c)
			case c < 0x20:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, `\ufffd`...)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return append(out, '"')
}
