package test

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// A client probing with an ApiVersions version we do not have gets a v0
// answer with UNSUPPORTED_VERSION and our ranges, and the connection stays
// usable (docs/kafka-compat.md item 1).
func TestApiVersionsUnknownVersion(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	rc := dialRaw(t, c.Addr)

	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5 // beyond our v4; kmsg can still encode it
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	corr := rc.send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	rc.read(corr, resp)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	var apiVersions *kmsg.ApiVersionsResponseApiKey
	for i := range resp.ApiKeys {
		if resp.ApiKeys[i].ApiKey == 18 {
			apiVersions = &resp.ApiKeys[i]
		}
	}
	if apiVersions == nil || apiVersions.MaxVersion != 4 {
		t.Fatalf("ApiVersions range missing or wrong: %+v", apiVersions)
	}

	req.Version = 4
	got := rc.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if got.ErrorCode != 0 || len(got.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v4 after the probe: error %d, %d keys", got.ErrorCode, len(got.ApiKeys))
	}
	// transaction.version 2 is finalized with Produce v12, EndTxn v5 and
	// TxnOffsetCommit v5: a client that sees one without the others fails.
	if f := got.FinalizedFeatures; len(f) != 1 || f[0].Name != "transaction.version" || f[0].MaxVersionLevel != 2 {
		t.Errorf("finalized features %+v, want transaction.version at 2", f)
	}
	want := map[int16][2]int16{0: {3, 12}, 1: {4, 16}, 2: {1, 11}, 3: {0, 12}, 18: {0, 4}, 19: {0, 7}, 22: {0, 5}, 26: {0, 5}, 28: {0, 5}}
	for _, k := range got.ApiKeys {
		if w, ok := want[k.ApiKey]; ok && (k.MinVersion != w[0] || k.MaxVersion != w[1]) {
			t.Errorf("key %d: versions %d-%d, want %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
		}
		delete(want, k.ApiKey)
	}
	if len(want) != 0 {
		t.Errorf("keys not advertised: %v", want)
	}
}

// Requests for other keys at versions we do not serve close the connection,
// as Kafka does; other connections are unaffected.
func TestUnsupportedVersionClosesConnection(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	rc := dialRaw(t, c.Addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 13
	rc.send(req)
	rc.expectClosed()

	ok := dialRaw(t, c.Addr)
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version = 12
	if resp := ok.roundTrip(mreq).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("metadata on a fresh connection: %d brokers", len(resp.Brokers))
	}
}

func TestOversizedFrameClosesConnection(t *testing.T) {
	t.Parallel()
	c := startCluster(t, func(cfg *gateway.Config) { cfg.MaxFrameBytes = 1 << 20 })
	rc := dialRaw(t, c.Addr)
	rc.write(binary.BigEndian.AppendUint32(nil, 2<<20))
	rc.expectClosed()

	neg := dialRaw(t, c.Addr)
	neg.write([]byte{0xff, 0xff, 0xff, 0xf0})
	neg.expectClosed()
}

func TestTruncatedAndGarbledFrames(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)

	// A body cut short inside the header.
	rc := dialRaw(t, c.Addr)
	rc.write([]byte{0, 0, 0, 5, 0, 3, 0, 1, 0})
	rc.expectClosed()

	// A Metadata v1 request whose topic array claims more than is there.
	garbled := dialRaw(t, c.Addr)
	frame := []byte{0, 3, 0, 1, 0, 0, 0, 7, 0xff, 0xff, 0, 0, 0, 9, 0, 4, 'a'}
	garbled.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...))
	garbled.expectClosed()

	// A client that sends half a frame and hangs up leaves nothing behind.
	half := dialRaw(t, c.Addr)
	half.write([]byte{0, 0, 1, 0, 0, 18})
	_ = half.conn.Close()

	fresh := dialRaw(t, c.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	if resp := fresh.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("gateway unhealthy after bad frames: error %d", resp.ErrorCode)
	}
}

// Responses leave in request order even when later requests finish first.
func TestPipelinedResponsesInOrder(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "pipe", 1, nil)
	rc := dialRaw(t, c.Addr)
	var reqs []kmsg.Request
	for i := range 30 {
		switch i % 3 {
		case 0:
			// A long-poll fetch that waits for data that never comes.
			reqs = append(reqs, fetchReq(11, "pipe", [16]byte{}, 0, 0))
		case 1:
			reqs = append(reqs, produceReq(9, "pipe", 0, testBatch(-1, -1, -1, time.Now().UnixMilli(), "x")))
		default:
			reqs = append(reqs, kmsg.NewPtrApiVersionsRequest())
		}
	}
	var corrs []int32
	for _, r := range reqs {
		corrs = append(corrs, rc.send(r))
	}
	for i, r := range reqs {
		resp := r.ResponseKind()
		resp.SetVersion(r.GetVersion())
		rc.read(corrs[i], resp)
	}
}

func TestFetchOutOfRange(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "oor", 1, nil)
	rc := dialRaw(t, c.Addr)
	pr := rc.roundTrip(produceReq(9, "oor", 0, testBatch(-1, -1, -1, 1000, "a", "b", "c"))).(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	for _, off := range []int64{4, 1000, -5} {
		resp := rc.roundTrip(fetchReq(12, "oor", [16]byte{}, 0, off)).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 3 || p.LogStartOffset != 0 {
			t.Errorf("fetch at %d: error %v, high watermark %d, log start %d; want OFFSET_OUT_OF_RANGE, 3, 0",
				off, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, p.LogStartOffset)
		}
	}
	// Fetching exactly at the high watermark is not out of range: it waits.
	resp := rc.roundTrip(fetchReq(12, "oor", [16]byte{}, 0, 3)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
		t.Errorf("fetch at the high watermark: error %v, %d bytes, hwm %d", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
	}
}

func TestProduceMissingTopicWithoutAutoCreate(t *testing.T) {
	t.Parallel()
	c := startCluster(t, func(cfg *gateway.Config) { cfg.AutoCreateTopics = false })
	rc := dialRaw(t, c.Addr)
	resp := rc.roundTrip(produceReq(9, "missing", 0, testBatch(-1, -1, -1, 1, "x"))).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("missing")
	meta.Topics = append(meta.Topics, mt)
	meta.AllowAutoTopicCreation = true
	mresp := rc.roundTrip(meta).(*kmsg.MetadataResponse)
	if code := mresp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata for a missing topic with auto-create off: %v", kerr.ErrorForCode(code))
	}
}

// allow_auto_topic_creation=false is honoured even when the gateway creates
// topics automatically.
func TestMetadataHonoursNoAutoCreate(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	rc := dialRaw(t, c.Addr)
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("not-wanted")
	meta.Topics = append(meta.Topics, mt)
	meta.AllowAutoTopicCreation = false
	resp := rc.roundTrip(meta).(*kmsg.MetadataResponse)
	if code := resp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("got %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	streams, err := c.Client.ListStreams(testContext(t, 5*time.Second), 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(streams.StreamNames, "not-wanted") {
		t.Fatal("the stream was created although the request did not allow it")
	}

	meta.AllowAutoTopicCreation = true
	resp = rc.roundTrip(meta).(*kmsg.MetadataResponse)
	if code := resp.Topics[0].ErrorCode; code != 0 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("auto-create: %v, %d partitions", kerr.ErrorForCode(code), len(resp.Topics[0].Partitions))
	}
	if resp.Topics[0].TopicID == [16]byte{} {
		t.Fatal("metadata v12 without a topic id")
	}
}

// A consumer that starts in the middle of what was one produce batch gets
// the records from its offset on (docs/kafka-compat.md item 9).
func TestFetchInsideBatch(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "inside", 1, nil)
	rc := dialRaw(t, c.Addr)
	vals := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	if code := rc.roundTrip(produceReq(9, "inside", 0, testBatch(-1, -1, -1, 5, vals...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	ctx := testContext(t, 20*time.Second)
	cl := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"inside": {0: kgo.NewOffset().At(5)}}))
	var got []string
	for len(got) < 5 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("got %v: %v", got, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, vals[5:]) {
		t.Fatalf("consumed %v, want %v", got, vals[5:])
	}
}

// A retried idempotent batch is answered with its original offset and not
// written twice; a gap is refused.
func TestIdempotentProduce(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "idem", 1, nil)
	rc := dialRaw(t, c.Addr)
	ipr := rc.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 || ipr.ProducerID < 0 {
		t.Fatalf("InitProducerId: %v, id %d", kerr.ErrorForCode(ipr.ErrorCode), ipr.ProducerID)
	}
	pid, epoch := ipr.ProducerID, ipr.ProducerEpoch
	produce := func(seq int32, vals ...string) kmsg.ProduceResponseTopicPartition {
		return rc.roundTrip(produceReq(9, "idem", 0, testBatch(pid, epoch, seq, 1, vals...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	if p := produce(0, "a", "b"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if p := produce(0, "a", "b"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("retried batch: %v at %d, want its original offset 0", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if p := produce(5, "x"); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("batch after a gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := produce(2, "c"); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("next batch: %v at %d, want offset 2", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 8
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "idem"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if p := rc.roundTrip(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.Offset != 3 {
		t.Fatalf("high watermark %d after 3 distinct records, want 3", p.Offset)
	}
}

// Producer ids are not handed out twice across a gateway restart.
func TestProducerIDsUniqueAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := func() int64 {
		c, err := Start(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rc := dialRaw(t, c.Addr)
		resp := rc.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.ProducerID
	}
	a := first()
	b := first()
	if b <= a {
		t.Fatalf("producer id %d after restart, want more than %d", b, a)
	}
}

func TestProduceRecordLimits(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "big", 1, nil)
	createTopic(t, c, "rawtopic", 1, map[string]*string{"dis.record.format": kmsg.StringPtr("raw"), "dis.raw.headers": kmsg.StringPtr("refuse")})
	rc := dialRaw(t, c.Addr)

	huge := string(make([]byte, 1<<20+1))
	p := rc.roundTrip(produceReq(9, "big", 0, testBatch(-1, -1, -1, 1, huge))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("record over 1 MiB: %v, want MESSAGE_TOO_LARGE", kerr.ErrorForCode(p.ErrorCode))
	}

	b := kmsg.RecordBatch{Magic: 2, PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1}
	r := kmsg.Record{Key: []byte("k"), Value: []byte("v"), Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}}
	b.Records = appendRecord(nil, r)
	withHeader := rawBatch(b)
	p = rc.roundTrip(produceReq(9, "rawtopic", 0, withHeader)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.InvalidRecord.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "dis.raw.headers is refuse") || len(p.ErrorRecords) != 1 {
		t.Fatalf("headers on a raw topic with dis.raw.headers=refuse: %v (%v), %d record errors; want INVALID_RECORD naming the policy",
			kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage, len(p.ErrorRecords))
	}

	corrupt := testBatch(-1, -1, -1, 1, "v")
	corrupt[len(corrupt)-1] ^= 0xff
	p = rc.roundTrip(produceReq(9, "big", 0, corrupt)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("bad CRC: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(p.ErrorCode))
	}
}

// rawBatch fills in a hand-built batch's length and CRC.
func rawBatch(b kmsg.RecordBatch) []byte {
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32c(raw[21:]))
	return raw
}

// A frame that arrives in pieces, and several frames in one write, are both
// read correctly.
func TestFramesSplitAndCoalesced(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	rc := dialRaw(t, c.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "split", "1"
	frame := rc.fmt.AppendRequest(nil, req, 1)
	for _, b := range frame {
		rc.write([]byte{b})
		time.Sleep(time.Millisecond) // separate reads on the gateway side
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	rc.read(1, resp)

	var many []byte
	for corr := int32(2); corr <= 6; corr++ {
		many = append(many, rc.fmt.AppendRequest(nil, req, corr)...)
	}
	rc.write(many)
	for corr := int32(2); corr <= 6; corr++ {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		rc.read(corr, resp)
	}
}

// A fetch waiting at the high watermark (max_wait 20 s, min_bytes 1) is
// answered with records produced after it was sent.
func TestFetchLongPollWakesOnProduce(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "poll", 1, nil)
	rc := dialRaw(t, c.Addr)
	req := fetchReq(12, "poll", [16]byte{}, 0, 0)
	req.MaxWaitMillis = 20_000
	req.MinBytes = 1
	corr := rc.send(req)

	producer := dialRaw(t, c.Addr)
	time.Sleep(100 * time.Millisecond) // let the fetch start waiting
	if code := producer.roundTrip(produceReq(9, "poll", 0, testBatch(-1, -1, -1, 1, "late"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	rc.read(corr, resp)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
		t.Fatalf("long poll: error %v, %d bytes, high watermark %d", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
	}
}

// ListOffsets finds offsets by timestamp with DIS's AT_TIMESTAMP cursor.
func TestListOffsetsByTimestamp(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "times", 1, nil)
	rc := dialRaw(t, c.Addr)
	for _, ts := range []int64{1000, 2000, 3000} {
		if code := rc.roundTrip(produceReq(9, "times", 0, testBatch(-1, -1, -1, ts, "v"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	cases := []struct{ ts, offset, gotTS int64 }{
		{-2, 0, -1},     // earliest
		{-1, 3, -1},     // latest
		{-4, 0, -1},     // earliest local
		{-3, 2, 3000},   // max timestamp
		{500, 0, 1000},  // before everything
		{1500, 1, 2000}, // between records
		{2000, 1, 2000}, // exactly a record
		{3001, -1, -1},  // after everything
	}
	for _, version := range []int16{1, 4, 8} {
		for _, tc := range cases {
			if version < 7 && tc.ts == -3 || version < 8 && tc.ts == -4 {
				continue
			}
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version = version
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "times"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = tc.ts
			rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
			req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
			p := rc.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.Offset != tc.offset || p.Timestamp != tc.gotTS {
				t.Errorf("v%d timestamp %d: error %v, offset %d, timestamp %d; want offset %d, timestamp %d",
					version, tc.ts, kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp, tc.offset, tc.gotTS)
			}
		}
	}
}
