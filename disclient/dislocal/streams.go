package dislocal

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/disgw/disgw/disclient"
)

// Stream limits. DIS caps partitions by account quota; the embedded server
// caps them per stream so one request cannot allocate without bound.
const (
	maxPartitions         = 1000
	minRetentionHours     = 24
	maxRetentionHours     = 72
	defaultRetentionHours = 24
	maxStreamNameLen      = 64
	maxTags               = 50
	// maxPartitionUpdates bounds the scaling history kept per stream.
	maxPartitionUpdates = 100
)

// streamMeta is the durable description of a stream (the "s" key).
type streamMeta struct {
	Name string `json:"name"`
	// ID is the public stream_id, random and stable.
	ID string `json:"id"`
	// Key is the internal numeric key that prefixes the stream's records.
	Key              uint64 `json:"key"`
	CreateTime       int64  `json:"create_time"`
	LastModifiedTime int64  `json:"last_modified_time"`
	StreamType       string `json:"stream_type"`
	DataType         string `json:"data_type"`
	RetentionHours   int32  `json:"retention_hours"`
	AutoScaleEnabled bool   `json:"auto_scale_enabled"`
	// PartitionCount counts every partition ever created, ACTIVE or DELETED.
	PartitionCount int32 `json:"partition_count"`
	// Writable is the ACTIVE count: partitions [0, Writable) are ACTIVE and
	// [Writable, PartitionCount) are DELETED (readable, not writable).
	Writable int32                       `json:"writable"`
	Tags     []disclient.Tag             `json:"tags,omitempty"`
	Updates  []disclient.PartitionUpdate `json:"updates,omitempty"`
}

// stream is a stream in memory. Record operations hold mu shared; changes to
// the metadata or the partition list hold it exclusively.
type stream struct {
	project string

	mu      sync.RWMutex
	meta    streamMeta
	parts   []*partition
	deleted bool

	// quotaType and quotaPartitions are the stream type and ACTIVE
	// partitions counted against the account quota (limits.go); Server.mu
	// guards them.
	quotaType       string
	quotaPartitions int32

	// roundRobin spreads records that carry no key and no partition.
	roundRobin atomic.Uint32
}

// partition is one partition in memory. mu serialises sequence number
// assignment and guards state and visible.
type partition struct {
	n  int32
	id string // canonical "shardId-%010d", cached for responses

	mu    sync.Mutex
	state partitionState
	// visible is the end (exclusive) of the records readers may see: those
	// that are as durable as the sync mode promises. Pebble shows a batch
	// before its WAL sync finishes; readers must not serve what a crash
	// could take back.
	visible int64

	// quota is the partition's traffic state when quotas are enforced.
	quota partitionQuota
}

func newPartition(n int32, ps partitionState) *partition {
	return &partition{n: n, id: disclient.PartitionID(n), state: ps, visible: ps.next}
}

// bounds returns the readable range [earliest, visible).
func (p *partition) bounds() (earliest, visible int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.earliest, p.visible
}

// readStream finds a stream and read-locks it; the caller must RUnlock it.
func (s *Server) readStream(project, name string) (*stream, error) {
	s.mu.RLock()
	st := s.streams[catalogKey(project, name)]
	s.mu.RUnlock()
	if st == nil {
		return nil, errStreamNotFound(name)
	}
	st.mu.RLock()
	if st.deleted {
		st.mu.RUnlock()
		return nil, errStreamNotFound(name)
	}
	return st, nil
}

// writeStream finds a stream and write-locks it; the caller must Unlock it.
func (s *Server) writeStream(project, name string) (*stream, error) {
	s.mu.RLock()
	st := s.streams[catalogKey(project, name)]
	s.mu.RUnlock()
	if st == nil {
		return nil, errStreamNotFound(name)
	}
	st.mu.Lock()
	if st.deleted {
		st.mu.Unlock()
		return nil, errStreamNotFound(name)
	}
	return st, nil
}

func (s *Server) nowMs() int64 { return s.cfg.Now().UnixMilli() }

// putStreamMeta persists a stream's metadata.
func (s *Server) putStreamMeta(project string, meta *streamMeta) error {
	v, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	return s.db.Set(namedKey(kindStream, project, meta.Name), v, s.writeOpts)
}

func checkRetention(hours *int32) (int32, error) {
	if hours == nil {
		return defaultRetentionHours, nil
	}
	if *hours < minRetentionHours || *hours > maxRetentionHours {
		return 0, errorf(disclient.CodeInvalidRequest, "Invalid data_duration. [%d] must be from %d to %d hours.", *hours, minRetentionHours, maxRetentionHours)
	}
	return *hours, nil
}

func checkDataType(t string) (string, error) {
	switch t {
	case "":
		return disclient.DataTypeBlob, nil
	case disclient.DataTypeBlob, "JSON", "CSV":
		return t, nil
	}
	return "", errorf(disclient.CodeInvalidRequest, "Invalid data_type. [%s] must be BLOB, JSON or CSV.", t)
}

func (s *Server) createStream(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.CreateStreamRequest
	if err := decodeBody(w, r, maxMetaBodyBytes, &req); err != nil {
		return err
	}
	if !validName(req.StreamName, maxStreamNameLen) {
		return errorf(disclient.CodeInvalidRequest, "Invalid stream_name. [%s] must be 1 to %d characters of A-Z, a-z, 0-9, _ and -.", req.StreamName, maxStreamNameLen)
	}
	if req.PartitionCount < 1 || req.PartitionCount > maxPartitions {
		return errorf(disclient.CodeInvalidRequest, "Invalid partition_count. [%d] must be from 1 to %d.", req.PartitionCount, maxPartitions)
	}
	retention, err := checkRetention(req.DataDuration)
	if err != nil {
		return err
	}
	dataType, err := checkDataType(req.DataType)
	if err != nil {
		return err
	}
	streamType := req.StreamType
	switch streamType {
	case "":
		streamType = s.cfg.Quotas.defaultStreamType()
	case disclient.StreamTypeCommon, disclient.StreamTypeAdvanced:
	default:
		return errorf(disclient.CodeInvalidRequest, "Invalid stream_type. [%s] must be COMMON or ADVANCED.", streamType)
	}
	if err := checkTags(req.Tags); err != nil {
		return err
	}

	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.streams[catalogKey(project, req.StreamName)]; ok {
		return errorf(disclient.CodeStreamExists, "Stream already exists. [%s]", req.StreamName)
	}
	if err := s.checkPartitionQuota(project, streamType, req.PartitionCount); err != nil {
		return err
	}
	meta := streamMeta{
		Name:             req.StreamName,
		ID:               rand.Text(),
		Key:              s.nextStreamKey,
		CreateTime:       now,
		LastModifiedTime: now,
		StreamType:       streamType,
		DataType:         dataType,
		RetentionHours:   retention,
		AutoScaleEnabled: req.AutoScaleEnabled != nil && *req.AutoScaleEnabled,
		PartitionCount:   req.PartitionCount,
		Writable:         req.PartitionCount,
		Tags:             req.Tags,
	}
	v, err := json.Marshal(&meta)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(namedKey(kindStream, project, meta.Name), v, nil); err != nil {
		return err
	}
	if err := b.Set(streamCounterKey, binary.BigEndian.AppendUint64(nil, meta.Key+1), nil); err != nil {
		return err
	}
	if err := s.db.Apply(b, s.writeOpts); err != nil {
		return err
	}
	s.nextStreamKey++
	st := &stream{project: project, meta: meta, quotaType: meta.StreamType, quotaPartitions: meta.Writable}
	for n := range meta.PartitionCount {
		st.parts = append(st.parts, newPartition(n, newPartitionState()))
	}
	s.streams[catalogKey(project, meta.Name)] = st
	s.streamsByKey[meta.Key] = st
	w.WriteHeader(http.StatusCreated)
	return nil
}

func checkTags(tags []disclient.Tag) error {
	if len(tags) > maxTags {
		return errorf(disclient.CodeInvalidRequest, "Too many tags. [%d] at most %d.", len(tags), maxTags)
	}
	for _, t := range tags {
		if t.Key == "" {
			return errorf(disclient.CodeInvalidRequest, "Invalid tag: empty key.")
		}
	}
	return nil
}

func (s *Server) listStreams(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", 10, 1, 100)
	if err != nil {
		return err
	}
	start := q.Get("start_stream_name")

	prefix := project + "\x00"
	s.mu.RLock()
	var all []*stream
	for k, st := range s.streams {
		if strings.HasPrefix(k, prefix) {
			all = append(all, st)
		}
	}
	s.mu.RUnlock()

	infos := make([]disclient.StreamInfo, 0, len(all))
	for _, st := range all {
		st.mu.RLock()
		if !st.deleted {
			infos = append(infos, st.info())
		}
		st.mu.RUnlock()
	}
	slices.SortFunc(infos, func(a, b disclient.StreamInfo) int { return strings.Compare(a.StreamName, b.StreamName) })

	resp := disclient.ListStreamsResponse{
		TotalNumber:    int64(len(infos)),
		StreamNames:    []string{},
		StreamInfoList: []disclient.StreamInfo{},
	}
	for _, info := range infos {
		if info.StreamName <= start {
			continue
		}
		if len(resp.StreamNames) == limit {
			resp.HasMoreStreams = true
			break
		}
		resp.StreamNames = append(resp.StreamNames, info.StreamName)
		resp.StreamInfoList = append(resp.StreamInfoList, info)
	}
	return writeJSON(w, http.StatusOK, &resp)
}

// info is the ListStreams view of a stream; partition_count counts the
// ACTIVE partitions, the ones a producer can write to. Needs st.mu.
func (st *stream) info() disclient.StreamInfo {
	return disclient.StreamInfo{
		StreamName:      st.meta.Name,
		CreateTime:      st.meta.CreateTime,
		RetentionPeriod: st.meta.RetentionHours,
		Status:          disclient.StreamStatusRunning,
		StreamType:      st.meta.StreamType,
		DataType:        st.meta.DataType,
		PartitionCount:  st.meta.Writable,
		Tags:            st.meta.Tags,
	}
}

func (s *Server) describeStream(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit_partitions", 100, 1, 1000)
	if err != nil {
		return err
	}
	first := int32(0)
	if v := q.Get("start_partitionId"); v != "" {
		n, err := disclient.ParsePartitionID(v)
		if err != nil {
			return errorf(disclient.CodeInvalidPartitionID, "Invalid start_partitionId. [%s]", v)
		}
		first = n + 1
	}
	st, err := s.readStream(project, r.PathValue("stream"))
	if err != nil {
		return err
	}
	resp := st.describe(first, limit)
	// Sent with no lock held (docs/design.md §11).
	st.mu.RUnlock()
	return writeJSON(w, http.StatusOK, resp)
}

// describe is the DescribeStream answer for st's partitions from first, at
// most limit of them. Needs st.mu.
func (st *stream) describe(first int32, limit int) *disclient.DescribeStreamResponse {
	m := &st.meta
	resp := disclient.DescribeStreamResponse{
		StreamName:             m.Name,
		StreamID:               m.ID,
		CreateTime:             m.CreateTime,
		LastModifiedTime:       m.LastModifiedTime,
		Status:                 disclient.StreamStatusRunning,
		StreamType:             m.StreamType,
		DataType:               m.DataType,
		RetentionPeriod:        m.RetentionHours,
		Partitions:             []disclient.PartitionResult{},
		WritablePartitionCount: m.Writable,
		ReadablePartitionCount: m.PartitionCount,
		UpdatePartitionCounts:  m.Updates,
		Tags:                   slices.Clone(m.Tags),
		AutoScaleEnabled:       m.AutoScaleEnabled,
	}
	for n := first; n >= 0 && n < m.PartitionCount; n++ {
		if len(resp.Partitions) == limit {
			resp.HasMorePartitions = true
			break
		}
		p := st.parts[n]
		earliest, visible := p.bounds()
		pr := disclient.PartitionResult{
			Status:              disclient.PartitionStatusActive,
			PartitionID:         p.id,
			HashRange:           hashRange(n, m.Writable),
			SequenceNumberRange: disclient.FormatSequenceNumberRange(earliest, visible),
		}
		if n >= m.Writable {
			pr.Status = disclient.PartitionStatusDeleted
		}
		resp.Partitions = append(resp.Partitions, pr)
	}
	return &resp
}

// hashRange is the "[lo : hi]" slice of [0, MaxInt64] that routes keys to
// ACTIVE partition n (see partitionForHash); DELETED partitions own none,
// which DIS shows as "[-1 : -1]".
func hashRange(n, writable int32) string {
	if n >= writable {
		return "[-1 : -1]"
	}
	step := int64(math.MaxInt64) / int64(writable)
	hi := int64(math.MaxInt64)
	if n < writable-1 {
		hi = (int64(n)+1)*step - 1
	}
	return fmt.Sprintf("[%d : %d]", int64(n)*step, hi)
}

func (s *Server) deleteStream(w http.ResponseWriter, r *http.Request, project string) error {
	name := r.PathValue("stream")
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[catalogKey(project, name)]
	if st == nil {
		return errStreamNotFound(name)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	skey := st.meta.Key

	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(namedKey(kindStream, project, name), nil); err != nil {
		return err
	}
	for _, kind := range []byte{kindPartition, kindRecord, kindTimeIndex, kindWriteIndex} {
		prefix := streamPrefix(kind, skey)
		if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
			return err
		}
	}
	appPrefix := project + "\x00"
	for k := range s.apps {
		if app, ok := strings.CutPrefix(k, appPrefix); ok {
			prefix := binary.BigEndian.AppendUint64(appCheckpointPrefix(project, app), skey)
			if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
				return err
			}
		}
	}
	if err := s.db.Apply(b, s.writeOpts); err != nil {
		return err
	}
	st.deleted = true
	delete(s.streams, catalogKey(project, name))
	delete(s.streamsByKey, skey)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// updatePartitionCount scales a stream. Scaling out adds ACTIVE partitions
// (or reactivates DELETED ones, which keep their records and continue their
// sequence numbers, as a Kafka partition would); scaling in marks the
// highest partitions DELETED: still readable, no longer writable. DIS's
// limits on how often a stream may be scaled are not enforced.
func (s *Server) updatePartitionCount(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.UpdatePartitionCountRequest
	if err := decodeBody(w, r, maxMetaBodyBytes, &req); err != nil {
		return err
	}
	target := req.TargetPartitionCount
	if target < 1 || target > maxPartitions {
		return errorf(disclient.CodeInvalidRequest, "Invalid target_partition_count. [%d] must be from 1 to %d.", target, maxPartitions)
	}
	// The catalog stays locked: the partition quota counts every stream.
	s.mu.Lock()
	defer s.mu.Unlock()
	name := r.PathValue("stream")
	st := s.streams[catalogKey(project, name)]
	if st == nil {
		return errStreamNotFound(name)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	src := st.meta.Writable
	if target == src {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	now := s.nowMs()
	if err := s.checkScalingRate(st.meta.Updates, now); err != nil {
		return err
	}
	if err := s.checkPartitionQuota(project, st.quotaType, target-src); err != nil {
		return err
	}
	meta := st.meta
	meta.Writable = target
	meta.PartitionCount = max(meta.PartitionCount, target)
	meta.LastModifiedTime = now
	meta.Updates = append(slices.Clone(meta.Updates), disclient.PartitionUpdate{
		CreateTimestamp:      now,
		SrcPartitionCount:    src,
		TargetPartitionCount: target,
	})
	if len(meta.Updates) > maxPartitionUpdates {
		meta.Updates = meta.Updates[len(meta.Updates)-maxPartitionUpdates:]
	}
	if err := s.putStreamMeta(project, &meta); err != nil {
		return err
	}
	for n := int32(len(st.parts)); n < meta.PartitionCount; n++ {
		st.parts = append(st.parts, newPartition(n, newPartitionState()))
	}
	st.meta = meta
	st.quotaPartitions = target
	w.WriteHeader(http.StatusOK)
	return nil
}

// updateStream changes a stream's retention and data type (PUT /v3/...,
// and the legacy Java SDK's PUT /v2/.../update).
func (s *Server) updateStream(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.UpdateStreamRequest
	if err := decodeBody(w, r, maxMetaBodyBytes, &req); err != nil {
		return err
	}
	st, err := s.writeStream(project, r.PathValue("stream"))
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	meta := st.meta
	if req.DataDuration != nil {
		if meta.RetentionHours, err = checkRetention(req.DataDuration); err != nil {
			return err
		}
	}
	if req.DataType != "" {
		if meta.DataType, err = checkDataType(req.DataType); err != nil {
			return err
		}
	}
	meta.LastModifiedTime = s.nowMs()
	if err := s.putStreamMeta(project, &meta); err != nil {
		return err
	}
	st.meta = meta
	w.WriteHeader(http.StatusOK)
	return nil
}

// streamTags serves the official SDK's BatchCreateTags and BatchDeleteTags,
// which share one path and tell themselves apart by action. Creating a tag
// whose key the stream has replaces its value; deleting a key the stream
// lacks is no error.
func (s *Server) streamTags(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.StreamTagsRequest
	if err := decodeBody(w, r, maxMetaBodyBytes, &req); err != nil {
		return err
	}
	if req.Action != disclient.TagActionCreate && req.Action != disclient.TagActionDelete {
		return errorf(disclient.CodeInvalidRequest, "Invalid action. [%s] must be create or delete.", req.Action)
	}
	if err := checkTags(req.Tags); err != nil {
		return err
	}
	id := r.PathValue("stream_id")
	name := s.streamNameByID(project, id)
	if name == "" {
		return errStreamNotFound(id)
	}
	st, err := s.writeStream(project, name)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	meta := st.meta
	meta.Tags = slices.DeleteFunc(slices.Clone(meta.Tags), func(t disclient.Tag) bool {
		return slices.ContainsFunc(req.Tags, func(u disclient.Tag) bool { return u.Key == t.Key })
	})
	if req.Action == disclient.TagActionCreate {
		meta.Tags = append(meta.Tags, req.Tags...)
		if err := checkTags(meta.Tags); err != nil {
			return err
		}
	}
	meta.LastModifiedTime = s.nowMs()
	if err := s.putStreamMeta(project, &meta); err != nil {
		return err
	}
	st.meta = meta
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// streamNameByID is the name of project's stream with id, "" for none. A
// stream's meta is guarded by its own lock, so each is read under it.
func (s *Server) streamNameByID(project, id string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, st := range s.streams {
		st.mu.RLock()
		name := ""
		if st.project == project && st.meta.ID == id {
			name = st.meta.Name
		}
		st.mu.RUnlock()
		if name != "" {
			return name
		}
	}
	return ""
}
