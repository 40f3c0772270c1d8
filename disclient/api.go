package disclient

import (
	"context"
	"fmt"
	"io"
	"os"
)

// API is the set of DIS operations disgw uses. *Client implements it over
// HTTP; tests and alternative transports can supply their own.
type API interface {
	CreateStream(ctx context.Context, req *CreateStreamRequest) error
	ListStreams(ctx context.Context, limit int, startStreamName string) (*ListStreamsResponse, error)
	// DescribeStream returns up to limit partitions after startPartitionID
	// (exclusive, "" for the first page).
	DescribeStream(ctx context.Context, name, startPartitionID string, limit int) (*DescribeStreamResponse, error)
	DeleteStream(ctx context.Context, name string) error
	UpdatePartitionCount(ctx context.Context, req *UpdatePartitionCountRequest) error
	UpdateStream(ctx context.Context, req *UpdateStreamRequest) error
	UpdateStreamTags(ctx context.Context, streamID string, req *StreamTagsRequest) error

	PutRecords(ctx context.Context, req *PutRecordsRequest) (*PutRecordsResponse, error)
	GetCursor(ctx context.Context, req *GetCursorRequest) (*GetCursorResponse, error)
	// GetRecords reads from a cursor; maxFetchBytes <= 0 leaves the server default.
	GetRecords(ctx context.Context, cursor string, maxFetchBytes int) (*GetRecordsResponse, error)

	CreateApp(ctx context.Context, name string) error
	ListApps(ctx context.Context, limit int, startAppName, streamName string) (*ListAppsResponse, error)
	DescribeApp(ctx context.Context, name string) (*App, error)
	DeleteApp(ctx context.Context, name string) error
	ConsumerState(ctx context.Context, app, stream string, limit int, startPartitionID string) (*ConsumerStateResponse, error)

	CommitCheckpoint(ctx context.Context, req *CommitCheckpointRequest) error
	GetCheckpoint(ctx context.Context, req *GetCheckpointRequest) (*GetCheckpointResponse, error)
	DeleteCheckpoint(ctx context.Context, req *DeleteCheckpointRequest) error
}

// PipelinedPutter is a DIS client whose PutRecords can answer as soon as
// DIS has given the records their sequence numbers, before they are
// durable: the embedded DIS served in process. The records stored are
// neither durable nor readable until wait returns nil. wait must be called
// once the answer has been read, and an error from it leaves the records
// unacknowledged, as a failed PutRecords would. A writer that keeps a
// partition's order with one call in flight can so make its next call
// while the last one's fsync runs, and one fsync covers both
// (docs/design.md §4).
type PipelinedPutter interface {
	PutRecordsPipelined(ctx context.Context, req *PutRecordsRequest) (resp *PutRecordsResponse, wait func() error, err error)
}

// SpanGetter is a DIS client that can answer GetRecords without reading
// the records' data into memory: the embedded DIS served in process, whose
// record log holds each record's data in one piece of a file. A record of
// more than spanMin bytes of data comes with its first head bytes in Data
// and the rest in Rest, for the caller to send from the file (sendfile)
// rather than read (docs/design.md §4). Data are the bytes of the file
// just before Rest, so the whole data is the range Whole returns. Rest is
// not checked against the log's checksum: a reader that needs the bytes
// checked must read them and check them itself. The file stays readable
// while a Rest refers to it, even after retention has deleted its segment.
type SpanGetter interface {
	GetRecordsSpans(ctx context.Context, cursor string, maxFetchBytes, head, spanMin int) (*GetRecordsResponse, error)
}

// FileSpan is Len bytes of File from Off on.
type FileSpan struct {
	File *os.File
	Off  int64
	Len  int
}

// Whole is the range of r's whole data, Data and Rest, when a SpanGetter
// left Rest in its file.
func (r *Record) Whole() FileSpan {
	return FileSpan{File: r.Rest.File, Off: r.Rest.Off - int64(len(r.Data)), Len: len(r.Data) + r.Rest.Len}
}

// AppendTo appends the span's bytes, read from its file, to b.
func (s FileSpan) AppendTo(b []byte) ([]byte, error) {
	at := len(b)
	b = append(b, make([]byte, s.Len)...)
	n, err := s.File.ReadAt(b[at:], s.Off)
	if n == s.Len {
		return b, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return b[:at], fmt.Errorf("disclient: reading %d bytes of %s at %d: %w", s.Len, s.File.Name(), s.Off, err)
}
