package dislocal

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient"
)

const maxAppNameLen = 200

// appMeta is the durable description of an app (the "a" key); the name is
// in the key.
type appMeta struct {
	Name       string `json:"-"`
	ID         string `json:"id"`
	CreateTime int64  `json:"create_time"`
}

func (s *Server) createApp(w http.ResponseWriter, r *http.Request, project string) error {
	var req disclient.CreateAppRequest
	if err := decodeBody(w, r, maxMetaBodyBytes, &req); err != nil {
		return err
	}
	if !validName(req.AppName, maxAppNameLen) {
		return errorf(disclient.CodeInvalidRequest, "Invalid app_name. [%s] must be 1 to %d characters of A-Z, a-z, 0-9, _ and -.", req.AppName, maxAppNameLen)
	}
	app := &appMeta{Name: req.AppName, ID: rand.Text(), CreateTime: s.nowMs()}
	v, err := json.Marshal(app)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := catalogKey(project, app.Name)
	if _, ok := s.apps[k]; ok {
		return errorf(disclient.CodeAppExists, "App already exists. [%s]", app.Name)
	}
	if err := s.checkAppQuota(project); err != nil {
		return err
	}
	if err := s.db.Set(namedKey(kindApp, project, app.Name), v, s.writeOpts); err != nil {
		return err
	}
	s.apps[k] = app
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", 10, 1, 100)
	if err != nil {
		return err
	}
	start := q.Get("start_app_name")
	streamName := q.Get("stream_name")
	resp, err := s.appList(project, streamName, start, limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

// appList is a ListApps answer, built under mu and sent after it is
// released: a client that does not read its answer holds no lock
// (docs/design.md §11).
func (s *Server) appList(project, streamName, start string, limit int) (*disclient.ListAppsResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var names []string
	prefix := project + "\x00"
	for k := range s.apps {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if streamName != "" {
		st := s.streams[catalogKey(project, streamName)]
		if st == nil {
			return nil, errStreamNotFound(streamName)
		}
		skey := st.meta.Key
		var filtered []string
		for _, name := range names {
			has, err := s.hasCheckpoints(project, name, skey)
			if err != nil {
				return nil, err
			}
			if has {
				filtered = append(filtered, name)
			}
		}
		names = filtered
	}

	resp := disclient.ListAppsResponse{Apps: []disclient.App{}, TotalNumber: int32(len(names))}
	for _, name := range names {
		if name <= start {
			continue
		}
		if len(resp.Apps) == limit {
			resp.HasMoreApp = true
			break
		}
		app, err := s.appView(project, s.apps[catalogKey(project, name)])
		if err != nil {
			return nil, err
		}
		resp.Apps = append(resp.Apps, app)
	}
	return &resp, nil
}

// appView is the API view of an app, with the streams it has checkpoints
// on. Needs s.mu.
func (s *Server) appView(project string, app *appMeta) (disclient.App, error) {
	view := disclient.App{AppName: app.Name, AppID: app.ID, CreateTime: app.CreateTime, CommitCheckpointStreamNames: []string{}}
	prefix := appCheckpointPrefix(project, app.Name)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return view, err
	}
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) != len(prefix)+12 {
			ok = it.Next()
			continue
		}
		skey := binary.BigEndian.Uint64(k[len(prefix):])
		if st := s.streamsByKey[skey]; st != nil {
			st.mu.RLock()
			view.CommitCheckpointStreamNames = append(view.CommitCheckpointStreamNames, st.meta.Name)
			st.mu.RUnlock()
		}
		// Skip the stream's other partitions.
		ok = it.SeekGE(prefixEnd(k[:len(prefix)+8]))
	}
	slices.Sort(view.CommitCheckpointStreamNames)
	return view, it.Close()
}

// hasCheckpoints reports whether an app has a checkpoint on a stream.
func (s *Server) hasCheckpoints(project, app string, skey uint64) (bool, error) {
	prefix := binary.BigEndian.AppendUint64(appCheckpointPrefix(project, app), skey)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return false, err
	}
	has := it.First()
	return has, it.Close()
}

func (s *Server) showApp(w http.ResponseWriter, r *http.Request, project string) error {
	name := r.PathValue("app")
	s.mu.RLock()
	app := s.apps[catalogKey(project, name)]
	var view disclient.App
	var err error = errAppNotFound(name)
	if app != nil {
		view, err = s.appView(project, app)
	}
	// Sent with no lock held (docs/design.md §11).
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, &view)
}

func (s *Server) deleteApp(w http.ResponseWriter, r *http.Request, project string) error {
	name := r.PathValue("app")
	s.mu.Lock()
	defer s.mu.Unlock()
	k := catalogKey(project, name)
	if s.apps[k] == nil {
		return errAppNotFound(name)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(namedKey(kindApp, project, name), nil); err != nil {
		return err
	}
	prefix := appCheckpointPrefix(project, name)
	if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
		return err
	}
	if err := s.db.Apply(b, s.writeOpts); err != nil {
		return err
	}
	delete(s.apps, k)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// consumerState lists an app's checkpoint and the offsets of each partition
// of a stream. start_partition_id is exclusive, as start_partitionId is in
// DescribeStream.
func (s *Server) consumerState(w http.ResponseWriter, r *http.Request, project string) error {
	q := r.URL.Query()
	if err := checkCheckpointType(q.Get("checkpoint_type"), true); err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	first := int32(0)
	if v := q.Get("start_partition_id"); v != "" {
		n, err := disclient.ParsePartitionID(v)
		if err != nil {
			return errorf(disclient.CodeInvalidPartitionID, "Invalid start_partition_id. [%s]", v)
		}
		first = n + 1
	}
	appName, streamName := r.PathValue("app"), r.PathValue("stream")
	resp, err := s.consumingStates(project, appName, streamName, first, limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

// consumingStates is a ConsumerState answer, built under the locks and
// sent after they are released (docs/design.md §11).
func (s *Server) consumingStates(project, appName, streamName string, first int32, limit int) (*disclient.ConsumerStateResponse, error) {
	st, err := s.checkpointTarget(project, appName, streamName)
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	defer st.mu.RUnlock()

	resp := disclient.ConsumerStateResponse{
		StreamName:               streamName,
		AppName:                  appName,
		PartitionConsumingStates: []disclient.PartitionConsumingState{},
	}
	for n := first; n >= 0 && n < st.meta.PartitionCount; n++ {
		if len(resp.PartitionConsumingStates) == limit {
			resp.HasMore = true
			break
		}
		p := st.parts[n]
		seq, _, err := s.readCheckpoint(project, appName, st.meta.Key, n)
		if err != nil {
			return nil, err
		}
		earliest, visible := p.bounds()
		status := disclient.PartitionStatusActive
		if n >= st.meta.Writable {
			status = disclient.PartitionStatusDeleted
		}
		resp.PartitionConsumingStates = append(resp.PartitionConsumingStates, disclient.PartitionConsumingState{
			PartitionID:    p.id,
			SequenceNumber: seq,
			LatestOffset:   visible,
			EarliestOffset: earliest,
			CheckpointType: disclient.CheckpointLastRead,
			Status:         status,
		})
	}
	return &resp, nil
}
