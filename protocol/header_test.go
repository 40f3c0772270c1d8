package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameOf encodes req as a client sends it and returns the frame body, as
// NextFrame hands it to ParseRequest.
func frameOf(t testing.TB, req kmsg.Request, version int16, correlationID int32, clientID *string) []byte {
	t.Helper()
	req.SetVersion(version)
	var opts []kmsg.RequestFormatterOpt
	if clientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*clientID))
	}
	wire := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, correlationID)
	frame, n, err := NextFrame(wire, DefaultMaxFrameSize)
	if err != nil || n != len(wire) {
		t.Fatalf("framing: n %d of %d, %v", n, len(wire), err)
	}
	return frame
}

func metadataRequest() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"orders", "payments"} {
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, topic)
	}
	req.AllowAutoTopicCreation = true
	return req
}

func TestParseRequest(t *testing.T) {
	client := "app-1"
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = -1
	produce.TimeoutMillis = 1500
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "orders"
	partition := kmsg.NewProduceRequestTopicPartition()
	partition.Partition = 3
	partition.Records = []byte("not parsed here")
	topic.Partitions = append(topic.Partitions, partition)
	produce.Topics = append(produce.Topics, topic)

	for _, tc := range []struct {
		name     string
		req      kmsg.Request
		version  int16
		clientID *string
		flexible bool
	}{
		{"metadata v4", metadataRequest(), 4, &client, false},
		{"metadata v9 flexible", metadataRequest(), 9, &client, true},
		{"metadata v12 null client id", metadataRequest(), 12, nil, true},
		{"produce v3", produce, 3, &client, false},
		{"produce v9 flexible", produce, 9, &client, true},
		{"api versions v3", kmsg.NewPtrApiVersionsRequest(), 3, &client, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame := frameOf(t, tc.req, tc.version, 77, tc.clientID)
			got, err := ParseRequest(frame)
			if err != nil {
				t.Fatal(err)
			}
			h := got.Header
			if h.Key != tc.req.Key() || h.Version != tc.version || h.CorrelationID != 77 {
				t.Errorf("header %+v", h)
			}
			if (h.ClientID == nil) != (tc.clientID == nil) || (h.ClientID != nil && *h.ClientID != *tc.clientID) {
				t.Errorf("client id %v, want %v", h.ClientID, tc.clientID)
			}
			if got.Body.GetVersion() != tc.version || got.Body.IsFlexible() != tc.flexible {
				t.Errorf("body version %d flexible %v", got.Body.GetVersion(), got.Body.IsFlexible())
			}
			if want, have := tc.req.AppendTo(nil), got.Body.AppendTo(nil); !bytes.Equal(want, have) {
				t.Errorf("body re-encodes as %x, want %x", have, want)
			}
		})
	}
}

func TestParseRequestSkipsHeaderTags(t *testing.T) {
	req := metadataRequest()
	req.SetVersion(9)
	var frame []byte
	frame = binary.BigEndian.AppendUint16(frame, 3)
	frame = binary.BigEndian.AppendUint16(frame, 9)
	frame = binary.BigEndian.AppendUint32(frame, 5)
	frame = binary.BigEndian.AppendUint16(frame, 1)
	frame = append(frame, 'c')
	frame = append(frame, 2, 0, 3, 'x', 'y', 'z', 7, 0) // tag 0 (3 bytes), tag 7 (empty)
	frame = req.AppendTo(frame)
	got, err := ParseRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if md := got.Body.(*kmsg.MetadataRequest); len(md.Topics) != 2 || *md.Topics[1].Topic != "payments" {
		t.Errorf("body after header tags: %+v", md.Topics)
	}
}

func TestParseRequestControlledShutdownV0HasNoClientID(t *testing.T) {
	// kmsg's RequestFormatter leaves this old form to the caller.
	req := kmsg.NewPtrControlledShutdownRequest()
	req.BrokerID = 0x01020304
	req.SetVersion(0)
	frame := req.AppendTo([]byte{0, 7, 0, 0, 0, 0, 0, 9})
	got, err := ParseRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.ClientID != nil || got.Body.(*kmsg.ControlledShutdownRequest).BrokerID != 0x01020304 {
		t.Errorf("got header %+v, body %+v", got.Header, got.Body)
	}
}

func TestParseRequestUnknownKey(t *testing.T) {
	frame := []byte{0x7f, 0x00, 0, 1, 0, 0, 0, 42, 0xff, 0xff}
	_, err := ParseRequest(frame)
	var uk *UnknownKeyError
	if !errors.As(err, &uk) {
		t.Fatalf("got %v, want *UnknownKeyError", err)
	}
	if uk.Header.Key != 0x7f00 || uk.Header.Version != 1 || uk.Header.CorrelationID != 42 {
		t.Errorf("header %+v", uk.Header)
	}
}

func TestParseRequestUnsupportedVersion(t *testing.T) {
	// A newer client probes with an ApiVersions version kmsg does not know;
	// its body cannot be parsed, but the header must come back whole.
	max := kmsg.NewPtrApiVersionsRequest().MaxVersion()
	var frame []byte
	frame = binary.BigEndian.AppendUint16(frame, 18)
	frame = binary.BigEndian.AppendUint16(frame, uint16(max+5))
	frame = binary.BigEndian.AppendUint32(frame, 1234)
	frame = binary.BigEndian.AppendUint16(frame, 3)
	frame = append(frame, "cli"...)
	frame = append(frame, 0, 0xde, 0xad) // tags and a body from the future
	_, err := ParseRequest(frame)
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) {
		t.Fatalf("got %v, want *UnsupportedVersionError", err)
	}
	h := uv.Header
	if h.Key != 18 || h.Version != max+5 || h.CorrelationID != 1234 || h.ClientID == nil || *h.ClientID != "cli" || uv.MaxVersion != max {
		t.Errorf("got %+v (client id %v), max %d", h, h.ClientID, uv.MaxVersion)
	}

	negative := bytes.Clone(frame)
	binary.BigEndian.PutUint16(negative[2:], 0xffff)
	if _, err := ParseRequest(negative); !errors.As(err, &uv) || uv.Header.Version != -1 {
		t.Errorf("version -1: got %v", err)
	}
}

func TestParseRequestTruncated(t *testing.T) {
	frame := frameOf(t, metadataRequest(), 9, 31, kmsg.StringPtr("client"))
	for i := range len(frame) {
		_, err := ParseRequest(frame[:i])
		var mr *MalformedRequestError
		if !errors.As(err, &mr) {
			t.Fatalf("%d of %d bytes: got %v, want *MalformedRequestError", i, len(frame), err)
		}
		if i >= 8 && (mr.Header.Key != 3 || mr.Header.Version != 9 || mr.Header.CorrelationID != 31) {
			t.Fatalf("%d bytes: header %+v", i, mr.Header)
		}
	}
}

func TestParseRequestBadClientIDLength(t *testing.T) {
	frame := []byte{0, 3, 0, 4, 0, 0, 0, 1, 0xff, 0xfe} // length -2
	_, err := ParseRequest(frame)
	var mr *MalformedRequestError
	if !errors.As(err, &mr) {
		t.Fatalf("got %v, want *MalformedRequestError", err)
	}
}
