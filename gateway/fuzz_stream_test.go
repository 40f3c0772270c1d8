package gateway

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestStream drives whole request streams into one live gateway over
// a loopback socket: frames of any API key and version, valid and mutated.
// After every input the gateway must still answer ApiVersions on a fresh
// connection, and its heap must stay under fuzzHeapBound. The seeds, one
// frame per advertised (key, version) plus hand-made hostile frames, run in
// every go test; docs/operations.md says how to run it for longer.
func FuzzRequestStream(f *testing.F) {
	for _, seed := range streamSeeds(f) {
		f.Add(seed)
	}
	gw := startFuzzGateway(f)
	addr := gw.Addr().String()
	f.Fuzz(func(t *testing.T, stream []byte) {
		sendStream(t, addr, stream)
		if err := answersApiVersions(addr); err != nil {
			t.Fatalf("gateway stopped answering after a %d-byte stream: %v", len(stream), err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > fuzzHeapBound {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > fuzzHeapBound {
				t.Fatalf("heap in use %d MiB after a %d-byte stream, bound %d MiB", ms.HeapInuse>>20, len(stream), fuzzHeapBound>>20)
			}
		}
	})
}

// fuzzHeapBound is the heap the fuzzed gateway may use; the gateway's
// own budgets are set far below it in startFuzzGateway.
const fuzzHeapBound = 512 << 20

func startFuzzGateway(f *testing.F) *Gateway {
	gw, _ := startCounted(f)
	return gw
}

// sendStream writes stream to a new connection as a sequence of frames: each
// frame's 4-byte size prefix is taken from the stream but clamped to the
// bytes that follow, so a mutated size never leaves the test waiting for
// bytes that will not come. Responses are drained in the background and the
// connection is closed once the gateway has had a moment to work.
func sendStream(t *testing.T, addr string, stream []byte) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = conn.Close() }()
	go func() { _, _ = io.Copy(io.Discard, conn) }()
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	var out []byte
	for len(stream) >= 4 {
		size := int(binary.BigEndian.Uint32(stream))
		stream = stream[4:]
		if size < 0 || size > len(stream) {
			size = len(stream)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(size))
		out = append(out, stream[:size]...)
		stream = stream[size:]
	}
	if _, err := conn.Write(out); err != nil {
		return // the gateway may close a connection that sent garbage
	}
	time.Sleep(20 * time.Millisecond)
}

// answersApiVersions sends ApiVersions v3 on a new connection and waits for
// its answer.
func answersApiVersions(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "fuzz", "1"
	if _, err := conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 7)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if len(body) < 4 || binary.BigEndian.Uint32(body) != 7 {
		return io.ErrUnexpectedEOF
	}
	return resp.ReadFrom(body[4:])
}

// streamSeeds is one frame for every advertised (key, version), holding
// kmsg's default request with one topic where the request has topics, and
// hostile frames: a zero-record batch, a claimed-huge frame, counts that
// claim more elements than the frame holds.
func streamSeeds(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	corr := int32(0)
	for _, k := range handlers.Bind(nil).Versions(true) {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			req.SetVersion(v)
			fillSeed(req)
			corr++
			seeds = append(seeds, fm.AppendRequest(nil, req, corr))
		}
	}
	seeds = append(seeds, zeroRecordProduce(fm))
	// A frame claiming 100 MiB of which 12 bytes arrive.
	seeds = append(seeds, []byte{0x06, 0x40, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0, 0})
	// Metadata v4 claiming 2^31-1 topics.
	seeds = append(seeds, []byte{0, 0, 0, 14, 0, 3, 0, 4, 0, 0, 0, 2, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	return seeds
}

// fillSeed gives requests that name topics, partitions or groups one of
// each, so mutations start from frames that reach the handlers' loops.
func fillSeed(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr("fuzz")
		r.Topics = append(r.Topics, t)
	case *kmsg.ProduceRequest:
		r.Acks = -1
		r.TimeoutMillis = 1000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "fuzz"
		t.Partitions = append(t.Partitions, kmsg.NewProduceRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.FetchRequest:
		r.MaxWaitMillis = 10
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "fuzz"
		t.Partitions = append(t.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.ListOffsetsRequest:
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = "fuzz"
		t.Partitions = append(t.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.JoinGroupRequest:
		r.Group = "fuzz"
		r.SessionTimeoutMillis = 6000
		r.RebalanceTimeoutMillis = 100
		r.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		r.Protocols = append(r.Protocols, p)
	case *kmsg.OffsetCommitRequest:
		r.Group = "fuzz"
		r.Generation = -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "fuzz"
		t.Partitions = append(t.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.CreateTopicsRequest:
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = "fuzz"
		t.NumPartitions = 1
		t.ReplicationFactor = -1
		r.Topics = append(r.Topics, t)
	}
}

// zeroRecordProduce is the 61-byte-class Produce that once crashed the
// gateway: a v2 batch with a valid CRC and no records.
func zeroRecordProduce(fm *kmsg.RequestFormatter) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks = -1
	req.TimeoutMillis = 1000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "fuzz"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = zeroRecordBatch()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return fm.AppendRequest(nil, req, 99)
}

// zeroRecordBatch is a v2 batch header with a correct CRC-32C and a record
// count of zero.
func zeroRecordBatch() []byte {
	be := binary.BigEndian
	b := be.AppendUint64(nil, 0)       // base offset
	b = be.AppendUint32(b, 49)         // batch length: the header after this field
	b = be.AppendUint32(b, 0)          // partition leader epoch
	b = append(b, 2, 0, 0, 0, 0)       // magic, CRC (set below)
	b = be.AppendUint16(b, 0)          // attributes
	b = be.AppendUint32(b, 0)          // last offset delta
	b = be.AppendUint64(b, 0)          // first timestamp
	b = be.AppendUint64(b, 0)          // max timestamp
	b = be.AppendUint64(b, ^uint64(0)) // producer id -1
	b = be.AppendUint16(b, ^uint16(0)) // producer epoch -1
	b = be.AppendUint32(b, ^uint32(0)) // base sequence -1
	b = be.AppendUint32(b, 0)          // records
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
