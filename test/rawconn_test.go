package test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the Kafka protocol by hand with kmsg, so tests can send what
// real clients never would.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// send writes req at its set version and returns its correlation id.
func (rc *rawConn) send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	rc.write(rc.fmt.AppendRequest(nil, req, rc.corr))
	return rc.corr
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	_ = rc.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.conn.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame, or returns the read error.
func (rc *rawConn) readFrame() ([]byte, error) {
	_ = rc.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(rc.conn, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rc.conn, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// read decodes the next response into resp (whose version must be set) and
// checks its correlation id.
func (rc *rawConn) read(corr int32, resp kmsg.Response) {
	rc.t.Helper()
	buf, err := rc.readFrame()
	if err != nil {
		rc.t.Fatalf("read response to %d: %v", corr, err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		rc.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := buf[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		body = body[1:] // empty header tagged fields
	}
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("decode %s v%d: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
}

// roundTrip sends req and decodes its response at the same version.
func (rc *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	corr := rc.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rc.read(corr, resp)
	return resp
}

// expectClosed asserts the gateway closes the connection.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	_, err := rc.readFrame()
	if err == nil {
		rc.t.Fatal("got a response, want the connection closed")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatal("connection stayed open, want it closed")
	}
}

// testBatch builds a v2 record batch by hand, as an idempotent producer would
// when producerID >= 0.
func testBatch(producerID int64, epoch int16, baseSeq int32, ts int64, values ...string) []byte {
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        epoch,
		FirstSequence:        baseSeq,
		NumRecords:           int32(len(values)),
	}
	if producerID < 0 {
		b.ProducerEpoch, b.FirstSequence = -1, -1
	}
	for i, v := range values {
		b.Records = appendRecord(b.Records, kmsg.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte(v)})
	}
	return rawBatch(b)
}

// appendRecord encodes r with its length prefix filled in.
func appendRecord(dst []byte, r kmsg.Record) []byte {
	r.Length = 0
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(dst)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// produceReq is a one-partition produce request.
func produceReq(version int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 10_000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func fetchReq(version int16, topic string, id [16]byte, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = topic, id
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.PartitionMaxBytes = 1 << 20
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}
