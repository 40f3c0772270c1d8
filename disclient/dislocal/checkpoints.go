package dislocal

import (
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient"
)

const maxCheckpointMetadata = 1000

// checkCheckpointType accepts LAST_READ, the only type DIS defines, and
// optionally an absent type.
func checkCheckpointType(t string, optional bool) error {
	if t == disclient.CheckpointLastRead || (optional && t == "") {
		return nil
	}
	return errorf(disclient.CodeInvalidRequest, "Invalid checkpoint_type. [%s] must be LAST_READ.", t)
}

// checkpointTarget checks that the app and the stream exist and returns the
// stream with both s.mu and st.mu read-locked, so that neither the app nor
// the stream can be deleted while a checkpoint is read or written. The
// caller must unlock both.
func (s *Server) checkpointTarget(project, app, stream string) (*stream, error) {
	s.mu.RLock()
	if s.apps[catalogKey(project, app)] == nil {
		s.mu.RUnlock()
		return nil, errAppNotFound(app)
	}
	st := s.streams[catalogKey(project, stream)]
	if st == nil {
		s.mu.RUnlock()
		return nil, errStreamNotFound(stream)
	}
	st.mu.RLock()
	return st, nil
}

// readCheckpoint returns a checkpoint's sequence number and metadata, or
// "-1" and "" when there is none.
func (s *Server) readCheckpoint(project, app string, skey uint64, n int32) (string, string, error) {
	v, closer, err := s.db.Get(checkpointKey(project, app, skey, n))
	if errors.Is(err, pebble.ErrNotFound) {
		return "-1", "", nil
	}
	if err != nil {
		return "", "", err
	}
	defer closer.Close()
	if len(v) < 8 {
		return "", "", errors.New("corrupt checkpoint")
	}
	return strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10), string(v[8:]), nil
}

// commitCheckpoint stores an app's position on a partition. As DIS, it
// takes only a sequence number inside the partition's valid range
// [earliest : next], next included (the adapter and disgw store the next
// record to read); anything else is DIS.4224.
func (s *Server) commitCheckpoint(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.CommitCheckpointRequest
	if err := decodeBody(w, r, maxMetaBodyBytes, &req); err != nil {
		return err
	}
	if err := checkCheckpointType(req.CheckpointType, false); err != nil {
		return err
	}
	seq, err := strconv.ParseInt(req.SequenceNumber, 10, 64)
	if err != nil {
		return errorf(disclient.CodeInvalidSequence, "Invalid sequence_number. [%s]", req.SequenceNumber)
	}
	if utf8.RuneCountInString(req.Metadata) > maxCheckpointMetadata {
		return errorf(disclient.CodeInvalidRequest, "Checkpoint metadata is too long. [%d] characters, at most %d.", utf8.RuneCountInString(req.Metadata), maxCheckpointMetadata)
	}
	st, err := s.checkpointTarget(project, req.AppName, req.StreamName)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	defer st.mu.RUnlock()
	n, aerr := parsePartition(req.PartitionID, len(st.parts))
	if aerr != nil {
		return aerr
	}
	if earliest, visible := st.parts[n].bounds(); seq < earliest || seq > visible {
		return outOfRange(seq, earliest, visible)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(req.Metadata)), uint64(seq))
	v = append(v, req.Metadata...)
	if err := s.db.Set(checkpointKey(project, req.AppName, st.meta.Key, n), v, s.writeOpts); err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (s *Server) showCheckpoint(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	if err := checkCheckpointType(q.Get("checkpoint_type"), false); err != nil {
		return err
	}
	app := q.Get("app_name")
	st, err := s.checkpointTarget(project, app, q.Get("stream_name"))
	if err != nil {
		return err
	}
	var resp disclient.GetCheckpointResponse
	n, aerr := parsePartition(q.Get("partition_id"), len(st.parts))
	if aerr == nil {
		resp.SequenceNumber, resp.Metadata, err = s.readCheckpoint(project, app, st.meta.Key, n)
	}
	// Sent with no lock held (docs/design.md §11).
	st.mu.RUnlock()
	s.mu.RUnlock()
	if aerr != nil {
		return aerr
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, &resp)
}

// deleteCheckpoint deletes one partition's checkpoint, or with no
// partition_id the app's checkpoints on every partition of the stream.
func (s *Server) deleteCheckpoint(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	if err := checkCheckpointType(q.Get("checkpoint_type"), false); err != nil {
		return err
	}
	app := q.Get("app_name")
	st, err := s.checkpointTarget(project, app, q.Get("stream_name"))
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	defer st.mu.RUnlock()
	if id := q.Get("partition_id"); id != "" {
		n, aerr := parsePartition(id, len(st.parts))
		if aerr != nil {
			return aerr
		}
		err = s.db.Delete(checkpointKey(project, app, st.meta.Key, n), s.writeOpts)
	} else {
		prefix := binary.BigEndian.AppendUint64(appCheckpointPrefix(project, app), st.meta.Key)
		err = s.db.DeleteRange(prefix, prefixEnd(prefix), s.writeOpts)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
