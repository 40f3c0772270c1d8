package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// splitResponse checks the size prefix of one response frame and returns
// the correlation id and everything after it.
func splitResponse(t *testing.T, wire []byte) (int32, []byte) {
	t.Helper()
	frame, n, err := NextFrame(wire, DefaultMaxFrameSize)
	if err != nil || n != len(wire) {
		t.Fatalf("response framing: n %d of %d, %v", n, len(wire), err)
	}
	return int32(binary.BigEndian.Uint32(frame)), frame[4:]
}

func TestAppendResponseHeaderVersions(t *testing.T) {
	apiVersions := func() kmsg.Response {
		resp := kmsg.NewPtrApiVersionsResponse()
		key := kmsg.NewApiVersionsResponseApiKey()
		key.ApiKey, key.MinVersion, key.MaxVersion = 3, 0, 12
		resp.ApiKeys = append(resp.ApiKeys, key)
		return resp
	}
	metadata := func() kmsg.Response {
		resp := kmsg.NewPtrMetadataResponse()
		broker := kmsg.NewMetadataResponseBroker()
		broker.Host, broker.Port = "localhost", 9092
		resp.Brokers = append(resp.Brokers, broker)
		return resp
	}
	for _, tc := range []struct {
		name    string
		key     int16
		version int16
		resp    func() kmsg.Response
		tagByte bool
	}{
		{"api versions v0", 18, 0, apiVersions, false},
		{"api versions v3 keeps header v0", 18, 3, apiVersions, false},
		{"metadata v8", 3, 8, metadata, false},
		{"metadata v9", 3, 9, metadata, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := RequestHeader{Key: tc.key, Version: tc.version, CorrelationID: -7}
			resp := tc.resp()
			prefix := []byte("earlier responses")
			wire := AppendResponse(bytes.Clone(prefix), hdr, resp)
			if !bytes.HasPrefix(wire, prefix) {
				t.Fatal("dst prefix overwritten")
			}
			if resp.GetVersion() != tc.version {
				t.Errorf("response version %d, want %d", resp.GetVersion(), tc.version)
			}
			corr, rest := splitResponse(t, wire[len(prefix):])
			if corr != -7 {
				t.Errorf("correlation id %d", corr)
			}
			if tc.tagByte {
				if rest[0] != 0 {
					t.Fatalf("header tagged fields byte %#x, want 0", rest[0])
				}
				rest = rest[1:]
			}
			decoded := kmsg.ResponseForKey(tc.key)
			decoded.SetVersion(tc.version)
			if err := decoded.ReadFrom(rest); err != nil {
				t.Fatal(err)
			}
			if want := resp.AppendTo(nil); !bytes.Equal(rest, want) {
				t.Errorf("body %x, want %x", rest, want)
			}
		})
	}
}

// TestFetchResponseOneAllocation checks that a Fetch response of large
// record batches is encoded into one allocation, not grown append by
// append to about twice its size.
func TestFetchResponseOneAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	resp := kmsg.NewPtrFetchResponse()
	for _, name := range []string{"a", "bb"} {
		topic := kmsg.NewFetchResponseTopic()
		topic.Topic = name
		for p := range int32(3) {
			part := kmsg.NewFetchResponseTopicPartition()
			part.Partition = p
			part.RecordBatches = make([]byte, 300<<10)
			topic.Partitions = append(topic.Partitions, part)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	for _, v := range []int16{4, 11, 12, 16} {
		hdr := RequestHeader{Key: 1, Version: v, CorrelationID: 7}
		var frame []byte
		if n := testing.AllocsPerRun(5, func() { frame = AppendResponse(nil, hdr, resp) }); n != 1 {
			t.Errorf("v%d: %v allocations", v, n)
		}
		if extra := cap(frame) - len(frame); extra > 64<<10 {
			t.Errorf("v%d: %d bytes allocated past the %d-byte frame", v, extra, len(frame))
		}
	}
}
