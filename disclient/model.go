package disclient

// The request and response bodies of the DIS REST API. Field names and JSON
// types follow the official Huawei Cloud Go SDK (services/dis/v2/model): the
// SDK decodes strictly, so sequence numbers, partition ids and cursors are
// strings and times and counts are numbers. The embedded server (dislocal)
// serves exactly these shapes, which keeps the two ends from drifting apart.

// Stream types and statuses as DIS spells them.
const (
	StreamTypeCommon   = "COMMON"
	StreamTypeAdvanced = "ADVANCED"

	StreamStatusCreating    = "CREATING"
	StreamStatusRunning     = "RUNNING"
	StreamStatusTerminating = "TERMINATING"
	StreamStatusFrozen      = "FROZEN"

	PartitionStatusCreating = "CREATING"
	PartitionStatusActive   = "ACTIVE"
	PartitionStatusDeleted  = "DELETED"
	PartitionStatusExpired  = "EXPIRED"

	DataTypeBlob = "BLOB"
)

// Cursor types accepted by GetCursor.
const (
	CursorAtSequenceNumber    = "AT_SEQUENCE_NUMBER"
	CursorAfterSequenceNumber = "AFTER_SEQUENCE_NUMBER"
	CursorTrimHorizon         = "TRIM_HORIZON"
	CursorLatest              = "LATEST"
	CursorAtTimestamp         = "AT_TIMESTAMP"
)

// CheckpointLastRead is the only checkpoint type DIS defines.
const CheckpointLastRead = "LAST_READ"

// Tag is a user tag on a stream. disgw keeps a stream's record format in one.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Tag actions of StreamTagsRequest, as the official SDK spells them.
const (
	TagActionCreate = "create"
	TagActionDelete = "delete"
)

// StreamTagsRequest is the body of POST
// /v2/{project_id}/stream/{stream_id}/tags/action, the official SDK's
// BatchCreateTags and BatchDeleteTags: the only way to change a stream's
// tags after creation, where disgw keeps topic configs.
type StreamTagsRequest struct {
	Action string `json:"action"`
	Tags   []Tag  `json:"tags"`
}

// CreateStreamRequest is the body of POST /v2/{project_id}/streams.
type CreateStreamRequest struct {
	StreamName     string `json:"stream_name"`
	PartitionCount int32  `json:"partition_count"`
	StreamType     string `json:"stream_type,omitempty"`
	DataType       string `json:"data_type,omitempty"`
	// DataDuration is the retention in hours (24–72 on DIS).
	DataDuration      *int32 `json:"data_duration,omitempty"`
	AutoScaleEnabled  *bool  `json:"auto_scale_enabled,omitempty"`
	DataSchema        string `json:"data_schema,omitempty"`
	CompressionFormat string `json:"compression_format,omitempty"`
	Tags              []Tag  `json:"tags,omitempty"`
}

// ListStreamsResponse is the body of GET /v2/{project_id}/streams.
type ListStreamsResponse struct {
	TotalNumber    int64        `json:"total_number"`
	StreamNames    []string     `json:"stream_names"`
	HasMoreStreams bool         `json:"has_more_streams"`
	StreamInfoList []StreamInfo `json:"stream_info_list"`
}

// StreamInfo is one stream in a ListStreams answer.
type StreamInfo struct {
	StreamName      string `json:"stream_name"`
	CreateTime      int64  `json:"create_time"`
	RetentionPeriod int32  `json:"retention_period"`
	Status          string `json:"status"`
	StreamType      string `json:"stream_type"`
	DataType        string `json:"data_type"`
	PartitionCount  int32  `json:"partition_count"`
	Tags            []Tag  `json:"tags,omitempty"`
}

// DescribeStreamResponse is the body of GET /v2/{project_id}/streams/{name}.
type DescribeStreamResponse struct {
	StreamName             string            `json:"stream_name"`
	StreamID               string            `json:"stream_id"`
	CreateTime             int64             `json:"create_time"`
	LastModifiedTime       int64             `json:"last_modified_time"`
	Status                 string            `json:"status"`
	StreamType             string            `json:"stream_type"`
	DataType               string            `json:"data_type"`
	RetentionPeriod        int32             `json:"retention_period"`
	Partitions             []PartitionResult `json:"partitions"`
	HasMorePartitions      bool              `json:"has_more_partitions"`
	WritablePartitionCount int32             `json:"writable_partition_count"`
	ReadablePartitionCount int32             `json:"readable_partition_count"`
	UpdatePartitionCounts  []PartitionUpdate `json:"update_partition_counts,omitempty"`
	Tags                   []Tag             `json:"tags,omitempty"`
	AutoScaleEnabled       bool              `json:"auto_scale_enabled"`
}

// PartitionResult describes one partition of a stream.
type PartitionResult struct {
	Status      string `json:"status"`
	PartitionID string `json:"partition_id"`
	HashRange   string `json:"hash_range"`
	// SequenceNumberRange is "[earliest : next]"; see ParseSequenceNumberRange.
	SequenceNumberRange string `json:"sequence_number_range"`
	ParentPartitions    string `json:"parent_partitions,omitempty"`
}

// PartitionUpdate records one scaling operation. The SDK types result_msg as
// an int32, so it is never sent.
type PartitionUpdate struct {
	CreateTimestamp      int64 `json:"create_timestamp"`
	SrcPartitionCount    int32 `json:"src_partition_count"`
	TargetPartitionCount int32 `json:"target_partition_count"`
	ResultCode           int32 `json:"result_code"`
	AutoScale            bool  `json:"auto_scale"`
}

// UpdatePartitionCountRequest is the body of PUT /v2/{project_id}/streams/{name}.
type UpdatePartitionCountRequest struct {
	StreamName           string `json:"stream_name"`
	TargetPartitionCount int32  `json:"target_partition_count"`
}

// UpdateStreamRequest is the body of PUT /v3/{project_id}/streams/{name}.
type UpdateStreamRequest struct {
	StreamName   string `json:"stream_name"`
	DataDuration *int32 `json:"data_duration,omitempty"`
	DataType     string `json:"data_type,omitempty"`
	DataSchema   string `json:"data_schema,omitempty"`
}

// PutRecordsRequest is the body of POST /v2/{project_id}/records.
type PutRecordsRequest struct {
	StreamName string            `json:"stream_name"`
	StreamID   string            `json:"stream_id,omitempty"`
	Records    []PutRecordsEntry `json:"records"`
}

// PutRecordsEntry is one record to upload. Data travels base64-encoded in
// JSON and raw in protobuf. Timestamp is not in the Go SDK's model, but the
// Java SDK and the protobuf message send it; DIS keeps it as the record time.
type PutRecordsEntry struct {
	Data            []byte `json:"data"`
	ExplicitHashKey string `json:"explicit_hash_key,omitempty"`
	PartitionID     string `json:"partition_id,omitempty"`
	PartitionKey    string `json:"partition_key,omitempty"`
	Timestamp       *int64 `json:"timestamp,omitempty"`
}

// PutRecordsResponse answers PutRecords. Records are in request order; a
// failed entry carries ErrorCode and no PartitionID.
type PutRecordsResponse struct {
	FailedRecordCount int32              `json:"failed_record_count"`
	Records           []PutRecordsResult `json:"records"`
}

// PutRecordsResult is the outcome of one uploaded record.
type PutRecordsResult struct {
	PartitionID    string `json:"partition_id,omitempty"`
	SequenceNumber string `json:"sequence_number,omitempty"`
	ErrorCode      string `json:"error_code,omitempty"`
	ErrorMessage   string `json:"error_message,omitempty"`
}

// GetCursorRequest holds the query of GET /v2/{project_id}/cursors.
type GetCursorRequest struct {
	StreamName  string
	PartitionID string
	CursorType  string
	// StartingSequenceNumber is used by AT_ and AFTER_SEQUENCE_NUMBER.
	StartingSequenceNumber string
	// Timestamp (ms) is used by AT_TIMESTAMP.
	Timestamp int64
}

// GetCursorResponse answers GetCursor.
type GetCursorResponse struct {
	PartitionCursor string `json:"partition_cursor"`
}

// GetRecordsResponse answers GET /v2/{project_id}/records.
type GetRecordsResponse struct {
	Records             []Record `json:"records"`
	NextPartitionCursor string   `json:"next_partition_cursor"`
}

// Record is one record read back from DIS.
type Record struct {
	PartitionKey   string `json:"partition_key,omitempty"`
	SequenceNumber string `json:"sequence_number"`
	Data           []byte `json:"data"`
	Timestamp      int64  `json:"timestamp"`
	TimestampType  string `json:"timestamp_type,omitempty"`
	// Rest is the data after Data that a SpanGetter left in its file; it
	// is empty for records read any other way.
	Rest FileSpan `json:"-"`
}

// CreateAppRequest is the body of POST /v2/{project_id}/apps.
type CreateAppRequest struct {
	AppName string `json:"app_name"`
}

// App describes one app (a consumer group in Kafka terms).
type App struct {
	AppName                     string   `json:"app_name"`
	AppID                       string   `json:"app_id"`
	CreateTime                  int64    `json:"create_time"`
	CommitCheckpointStreamNames []string `json:"commit_checkpoint_stream_names"`
}

// ListAppsResponse answers GET /v2/{project_id}/apps.
type ListAppsResponse struct {
	HasMoreApp  bool  `json:"has_more_app"`
	Apps        []App `json:"apps"`
	TotalNumber int32 `json:"total_number"`
}

// CommitCheckpointRequest is the body of POST /v2/{project_id}/checkpoints.
type CommitCheckpointRequest struct {
	AppName        string `json:"app_name"`
	CheckpointType string `json:"checkpoint_type"`
	StreamName     string `json:"stream_name"`
	PartitionID    string `json:"partition_id"`
	SequenceNumber string `json:"sequence_number"`
	Metadata       string `json:"metadata,omitempty"`
}

// GetCheckpointRequest holds the query of GET /v2/{project_id}/checkpoints.
type GetCheckpointRequest struct {
	AppName        string
	StreamName     string
	PartitionID    string
	CheckpointType string
}

// GetCheckpointResponse answers GetCheckpoint. With no checkpoint committed
// the sequence number is "-1" (the choice docs/dis-api.md takes, open question 4).
type GetCheckpointResponse struct {
	SequenceNumber string `json:"sequence_number"`
	Metadata       string `json:"metadata"`
}

// DeleteCheckpointRequest holds the query of DELETE /v2/{project_id}/checkpoints.
// An empty PartitionID deletes the checkpoints of every partition.
type DeleteCheckpointRequest struct {
	AppName        string
	StreamName     string
	PartitionID    string
	CheckpointType string
}

// ConsumerStateResponse answers GET /v2/{project_id}/apps/{app}/streams/{stream}.
type ConsumerStateResponse struct {
	HasMore                  bool                      `json:"has_more"`
	StreamName               string                    `json:"stream_name"`
	AppName                  string                    `json:"app_name"`
	PartitionConsumingStates []PartitionConsumingState `json:"partition_consuming_states"`
}

// PartitionConsumingState is one partition's checkpoint and offsets.
type PartitionConsumingState struct {
	PartitionID    string `json:"partition_id"`
	SequenceNumber string `json:"sequence_number"`
	LatestOffset   int64  `json:"latest_offset"`
	EarliestOffset int64  `json:"earliest_offset"`
	CheckpointType string `json:"checkpoint_type"`
	Status         string `json:"status"`
}
