package dislocal

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/disgw/disgw/disclient"
)

// cursor is a partition cursor in DIS's own shape: unpadded base64url of
// {"getIteratorParam":{...},"generateTimestamp":ms}. The Kafka adapter
// decodes cursors and fails on unknown keys, so the shape stays exactly this.
// StartingSequenceNumber is always the resolved position where reading
// starts, whatever the cursor type.
type cursor struct {
	Param             cursorParam `json:"getIteratorParam"`
	GenerateTimestamp int64       `json:"generateTimestamp"`
}

type cursorParam struct {
	StreamName             string `json:"stream-name"`
	PartitionID            string `json:"partition-id"`
	CursorType             string `json:"cursor-type"`
	StartingSequenceNumber string `json:"starting-sequence-number"`
}

// maxCursorLen rejects absurd cursors before decoding; DIS's are at most
// 512 characters.
const maxCursorLen = 1024

func encodeCursor(c *cursor) (string, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// decodeCursor parses a cursor and its position; padding is tolerated.
func decodeCursor(s string) (*cursor, int64, error) {
	bad := errorf(disclient.CodeInvalidCursor, "Invalid partition-cursor.")
	if s == "" || len(s) > maxCursorLen {
		return nil, 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, 0, bad
	}
	var c cursor
	if err := json.Unmarshal(raw, &c); err != nil || c.Param.StreamName == "" || c.GenerateTimestamp <= 0 {
		return nil, 0, bad
	}
	pos, err := strconv.ParseInt(c.Param.StartingSequenceNumber, 10, 64)
	if err != nil || pos < 0 {
		return nil, 0, bad
	}
	return &c, pos, nil
}

// cursorQuery is a GetCursor request as its query carries it, in text:
// the numbers are parsed only where the cursor type uses them, so a bad
// one is reported at the same point whichever way the request arrived.
type cursorQuery struct {
	stream, partition, cursorType string
	sequence, timestamp           string
}

// getCursor serves GET /cursors.
func (s *Server) getCursor(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	c, err := s.openCursor(project, &cursorQuery{
		stream:     q.Get("stream-name"),
		partition:  q.Get("partition-id"),
		cursorType: q.Get("cursor-type"),
		sequence:   q.Get("starting-sequence-number"),
		timestamp:  q.Get("timestamp"),
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, &disclient.GetCursorResponse{PartitionCursor: c})
}

// openCursor resolves a cursor request to a position and returns a cursor
// holding it.
func (s *Server) openCursor(project string, q *cursorQuery) (string, error) {
	name := q.stream
	if name == "" {
		return "", errorf(disclient.CodeInvalidRequest, "stream-name is required.")
	}
	partID := q.partition
	cursorType := q.cursorType
	if cursorType == "" {
		cursorType = disclient.CursorAtSequenceNumber
	}
	st, err := s.readStream(project, name)
	if err != nil {
		return "", err
	}
	defer st.mu.RUnlock()
	n, aerr := parsePartition(partID, len(st.parts))
	if aerr != nil {
		return "", aerr
	}
	p := st.parts[n]
	earliest, visible := p.bounds()

	var pos int64
	switch cursorType {
	case disclient.CursorAtSequenceNumber, disclient.CursorAfterSequenceNumber:
		text := q.sequence
		seq, err := strconv.ParseInt(text, 10, 64)
		if err != nil || seq < 0 {
			return "", errorf(disclient.CodeInvalidSequence, "Invalid starting-sequence-number. [%s]", text)
		}
		pos = seq
		if cursorType == disclient.CursorAfterSequenceNumber {
			if seq == math.MaxInt64 {
				return "", outOfRange(seq, earliest, visible)
			}
			pos = seq + 1
		}
		if pos < earliest || pos > visible {
			return "", outOfRange(seq, earliest, visible)
		}
	case disclient.CursorTrimHorizon:
		pos = earliest
	case disclient.CursorLatest:
		pos = visible
	case disclient.CursorAtTimestamp:
		text := q.timestamp
		ts, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return "", errorf(disclient.CodeInvalidRequest, "Invalid timestamp. [%s]", text)
		}
		if pos, err = s.seqAtTimestamp(st.meta.Key, n, ts, earliest, visible); err != nil {
			return "", err
		}
	default:
		return "", errorf(disclient.CodeInvalidCursorType, "Invalid cursor-type. [%s]", cursorType)
	}

	return encodeCursor(&cursor{
		Param: cursorParam{
			StreamName:             name,
			PartitionID:            partID,
			CursorType:             cursorType,
			StartingSequenceNumber: strconv.FormatInt(pos, 10),
		},
		GenerateTimestamp: s.nowMs(),
	})
}

// outOfRange is DIS.4224; the Kafka adapter matches the message prefix.
func outOfRange(seq, earliest, visible int64) *apiError {
	return errorf(disclient.CodeSequenceOutOfRange, "Sequence_number out of range. [%d] is not in [%d : %d]", seq, earliest, visible)
}

// seqAtTimestamp returns the first visible record whose timestamp is >= ts,
// or visible if there is none. When that record has been removed by
// retention, the timestamp is expired: DIS.4300, as DIS answers a
// timestamp earlier than its retention, naming the timestamp a request
// must be later than.
func (s *Server) seqAtTimestamp(skey uint64, n int32, ts, earliest, visible int64) (int64, error) {
	seq, key, err := s.firstIndexAtOrAfter(kindTimeIndex, skey, n, ts)
	if err != nil || key == nil {
		return visible, err
	}
	if seq < earliest {
		expired, _, _ := indexEntry(key)
		return 0, errTimestampExpired(expired)
	}
	return min(seq, visible), nil
}

// errTimestampExpired is DIS's answer to an AT_TIMESTAMP cursor before
// retention; the Java SDK recognises its message.
func errTimestampExpired(bound int64) *apiError {
	return errorf(disclient.CodeRequestError, "Request error. [timestamp is expired, timestamp should be larger than %d]", bound)
}
