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
