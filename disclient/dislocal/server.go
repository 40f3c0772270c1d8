package dislocal

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// SyncMode says when a write is acknowledged relative to reaching the disk.
type SyncMode string

const (
	// SyncAlways fsyncs the record log and pebble's write-ahead log before
	// answering each write request; concurrent requests share fsyncs (group
	// commit). An acknowledged write survives a process crash and a power
	// loss.
	SyncAlways SyncMode = "always"
	// SyncNone answers once the record data is in the OS page cache and its
	// references in pebble's memtable and WAL buffer, and leaves flushing to
	// pebble and the OS. It saves the fsync waits, but a process crash or
	// power loss can lose the writes of the last moments (pebble buffers the
	// WAL tail in the process before writing it to the OS). The store itself
	// always stays consistent: Open drops references whose data is not whole.
	SyncNone SyncMode = "none"
)

// The record log is the records subdirectory of the data directory, its
// segments rolled at logSegmentBytes.
const (
	logDirName      = "records"
	logSegmentBytes = 256 << 20
)

// dirMode is the mode of the data directory when the store creates it:
// readable by its owner only.
const dirMode = 0o700

// Pebble's memory, allocated outside the Go heap (and so outside the
// gateway's --memory-limit): the block cache, and up to pebbleMemTables
// memtables of pebbleMemTableBytes (the active one and those queued for
// flushing) plus one kept for reuse. Pebble holds only references and
// metadata, about 100 bytes a record (record data is in the record log), so
// a 4 MiB memtable takes some 40 000 records and the largest PutRecords
// (maxRecordsPerPut records, about 1 MB of keys) is an ordinary write. At
// most 8 + 5×4 = 28 MiB, sized for a gateway of 256 MiB in all
// (docs/dis-embedded.md, Memory).
const (
	pebbleCacheBytes    = 8 << 20
	pebbleMemTableBytes = 4 << 20
	pebbleMemTables     = 4
)

// Config configures an embedded DIS server.
type Config struct {
	// Dir is the data directory; the pebble database lives directly in it,
	// the record log in its records subdirectory.
	Dir string
	// Sync defaults to SyncAlways.
	Sync SyncMode
	// CursorTTL is how long a partition cursor stays valid (DIS.4225 after);
	// default 5 minutes, as on DIS.
	CursorTTL time.Duration
	// Now is the clock; default time.Now. Tests inject one to expire
	// cursors and records without sleeping.
	Now func() time.Time
	// RetentionCheckInterval is how often expired records are deleted;
	// default 1 minute.
	RetentionCheckInterval time.Duration
	// Logger receives server failures (every 5xx) and pebble's messages.
	Logger zerolog.Logger
	// Credentials, by access key, make the server require every request to
	// be signed as the official Go SDK signs (or to carry one of Tokens) and
	// answer HTTP 441 otherwise (auth.go). With neither Credentials nor
	// Tokens any request is accepted, signed or not.
	Credentials map[string]Credential
	// Tokens are the X-Auth-Token values accepted instead of a signature.
	Tokens []string
	// Quotas enforces DIS's per-partition traffic limits (quotas.go);
	// default QuotasNone. Throttling follows Now.
	Quotas QuotaMode
	// Limits enforces DIS's account quotas and scaling limits
	// (limits.go); the zero value enforces none.
	Limits Limits

	// segmentBytes is where the record log rolls to a new segment; default
	// logSegmentBytes. Tests make it small.
	segmentBytes int64
	// logFS and pebbleFS, when set, are the file systems of the record
	// log and pebble: tests crash them and fail their I/O.
	logFS    logfs.FS
	pebbleFS vfs.FS
	// scanRate is the record log's Options.ScanRate.
	scanRate int64
}

// Server is an embedded DIS server. It is an http.Handler; mount it on any
// listener.
type Server struct {
	cfg       Config
	log       zerolog.Logger
	db        *pebble.DB
	records   *recordlog.Log
	writeOpts *pebble.WriteOptions
	mux       *http.ServeMux

	// life is held shared by every request and exclusively by Close, so that
	// no request touches the database after it is closed.
	life   sync.RWMutex
	closed bool

	// mu guards the catalog: the maps and nextStreamKey, and each stream's
	// quotaType and quotaPartitions. Lock order is life, Server.mu, then
	// stream.mu, then partition.mu (several in ascending partition
	// number), then the record log's (docs/design.md §11).
	mu            sync.RWMutex
	streams       map[string]*stream // by catalogKey(project, name)
	streamsByKey  map[uint64]*stream
	apps          map[string]*appMeta // by catalogKey(project, name)
	nextStreamKey uint64

	stopSweep context.CancelFunc
	sweepDone chan struct{}
}

// catalogKey is how streams and apps are found in memory: project and name
// joined by 0x00, the same bytes that follow the kind byte in pebble.
func catalogKey(project, name string) string { return project + "\x00" + name }

// Open opens (or creates) the store in cfg.Dir, loads the catalog and starts
// the retention sweeper.
func Open(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("dislocal: Config.Dir is required")
	}
	if cfg.Sync == "" {
		cfg.Sync = SyncAlways
	}
	var writeOpts *pebble.WriteOptions
	switch cfg.Sync {
	case SyncAlways:
		writeOpts = pebble.Sync
	case SyncNone:
		writeOpts = pebble.NoSync
	default:
		return nil, fmt.Errorf("dislocal: unknown sync mode %q (want %q or %q)", cfg.Sync, SyncAlways, SyncNone)
	}
	quotas, err := ParseQuotaMode(string(cfg.Quotas))
	if err != nil {
		return nil, err
	}
	cfg.Quotas = quotas
	if cfg.CursorTTL <= 0 {
		cfg.CursorTTL = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = time.Minute
	}
	if cfg.segmentBytes <= 0 {
		cfg.segmentBytes = logSegmentBytes
	}
	// The store holds every record written, so a new directory is its
	// owner's alone; an existing one keeps the mode it was given.
	if cfg.pebbleFS == nil {
		if err := os.MkdirAll(cfg.Dir, dirMode); err != nil {
			return nil, fmt.Errorf("dislocal: create %s: %w", cfg.Dir, err)
		}
	}
	db, err := pebble.Open(cfg.Dir, &pebble.Options{
		FS:                          cfg.pebbleFS,
		Logger:                      pebbleLogger{cfg.Logger},
		CacheSize:                   pebbleCacheBytes,
		MemTableSize:                pebbleMemTableBytes,
		MemTableStopWritesThreshold: pebbleMemTables,
	})
	if err != nil {
		return nil, fmt.Errorf("dislocal: open %s: %w", cfg.Dir, err)
	}
	upgrade, err := checkFormat(db)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("dislocal: open %s: %w", cfg.Dir, err)
	}
	rlog, lastSeg, lastLen, err := recordlog.Open(recordlog.Options{
		FS:           cfg.logFS,
		Dir:          filepath.Join(cfg.Dir, logDirName),
		SegmentBytes: cfg.segmentBytes,
		Spares:       cfg.Sync == SyncAlways,
		Logger:       cfg.Logger,
		ScanRate:     cfg.scanRate,
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("dislocal: open record log in %s: %w", cfg.Dir, err)
	}
	if upgrade {
		if err := upgradeFormat(db, lastSeg, lastLen); err != nil {
			_ = rlog.Close()
			_ = db.Close()
			return nil, fmt.Errorf("dislocal: upgrade %s: %w", cfg.Dir, err)
		}
	}
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger,
		db:           db,
		records:      rlog,
		writeOpts:    writeOpts,
		streams:      make(map[string]*stream),
		streamsByKey: make(map[uint64]*stream),
		apps:         make(map[string]*appMeta),
		sweepDone:    make(chan struct{}),
	}
	if err := s.load(); err != nil {
		_ = rlog.Close()
		_ = db.Close()
		return nil, fmt.Errorf("dislocal: load %s: %w", cfg.Dir, err)
	}
	if err := s.recoverLog(lastSeg, lastLen); err != nil {
		_ = rlog.Close()
		_ = db.Close()
		return nil, fmt.Errorf("dislocal: recover %s: %w", cfg.Dir, err)
	}
	if err := s.reindexLog(); err != nil {
		_ = rlog.Close()
		_ = db.Close()
		return nil, fmt.Errorf("dislocal: index the record log of %s: %w", cfg.Dir, err)
	}
	s.routes()
	ctx, cancel := context.WithCancel(context.Background())
	s.stopSweep = cancel
	go s.sweepLoop(ctx)
	s.log.Info().Str("dir", cfg.Dir).Str("sync", string(cfg.Sync)).Int("streams", len(s.streams)).Msg("dislocal: opened")
	return s, nil
}

// WritesStopped is why the server takes no more writes, nil while it
// does: an fsync of its record log, a segment roll or the cleanup of a
// failed write failed, and only a restart, which recovers the log, brings
// writes back (docs/dis-embedded.md). Readiness probes ask it, as every
// other call still answers.
func (s *Server) WritesStopped() error {
	return s.records.Stopped()
}

// LogDamage names the damaged ranges of the record log known now, whose
// records reads answer with an error naming them until readers are moved
// past them (docs/dis-embedded.md, Damaged records), and counts those
// found since the server opened: what readiness details and the gateway
// exports as disgw_dis_corrupt_records_total.
func (s *Server) LogDamage() (found int64, known []string) {
	for _, d := range s.records.Damaged() {
		known = append(known, d.String())
	}
	return s.records.DamageFound(), known
}

// Close stops the sweeper, waits for in-flight requests and closes the
// database. Requests after Close get DIS.5000.
func (s *Server) Close() error {
	s.stopSweep()
	<-s.sweepDone
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.db.Close()
	if lerr := s.records.Close(); err == nil {
		err = lerr
	}
	return err
}

// HTTP timeouts of the embedded server. A client that stalls while
// sending headers or a body, or while reading an answer, is dropped rather
// than holding a connection and its buffers: 10 s for the headers, 1 min
// for a whole request (a 16 MiB PutRecords body over a slow link), 2 min
// to write an answer (GetRecords bodies are the largest), and 2 min of
// idle keep-alive, beyond the client's 90 s idle pool.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = time.Minute
	writeTimeout      = 2 * time.Minute
	idleTimeout       = 2 * time.Minute
)

// HTTPServer returns an http.Server serving s with the embedded server's
// timeouts, so that no caller serves it without them.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
	}
}

// ServeHTTP serves the DIS REST API. Trailing slashes are ignored.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		s.writeError(w, r, errorf(disclient.CodeSystemError, "Server is closed."))
		return
	}
	if s.authRequired() {
		var err error
		if r, err = s.authenticate(r); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		r2 := *r
		u := *r.URL
		u.Path = strings.TrimRight(p, "/")
		u.RawPath = strings.TrimRight(u.RawPath, "/")
		r2.URL = &u
		r = &r2
	}
	s.mux.ServeHTTP(w, r)
}

// handlerFunc serves one operation for one project. A returned error is
// written as a DIS error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request, project string) error

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	handle := func(pattern string, h handlerFunc) {
		s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			project := r.PathValue("project")
			if err := checkProject(project); err != nil {
				s.writeError(w, r, err)
				return
			}
			if err := h(w, r, project); err != nil {
				s.writeError(w, r, err)
			}
		})
	}
	handle("POST /v2/{project}/streams", s.createStream)
	handle("GET /v2/{project}/streams", s.listStreams)
	handle("GET /v2/{project}/streams/{stream}", s.describeStream)
	handle("DELETE /v2/{project}/streams/{stream}", s.deleteStream)
	handle("PUT /v2/{project}/streams/{stream}", s.updatePartitionCount)
	handle("PUT /v3/{project}/streams/{stream}", s.updateStream)
	handle("PUT /v2/{project}/streams/{stream}/update", s.updateStream)
	handle("POST /v2/{project}/stream/{stream_id}/tags/action", s.streamTags)

	handle("POST /v2/{project}/records", s.putRecords)
	handle("GET /v2/{project}/records", s.getRecords)
	handle("GET /v2/{project}/cursors", s.getCursor)

	handle("POST /v2/{project}/apps", s.createApp)
	handle("GET /v2/{project}/apps", s.listApps)
	handle("GET /v2/{project}/apps/{app}", s.showApp)
	handle("DELETE /v2/{project}/apps/{app}", s.deleteApp)
	handle("GET /v2/{project}/apps/{app}/streams/{stream}", s.consumerState)

	handle("POST /v2/{project}/checkpoints", s.commitCheckpoint)
	handle("GET /v2/{project}/checkpoints", s.showCheckpoint)
	handle("DELETE /v2/{project}/checkpoints", s.deleteCheckpoint)

	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{
			status:  http.StatusNotFound,
			code:    disclient.CodeInvalidRequest,
			message: fmt.Sprintf("No such API. [%s %s]", r.Method, r.URL.Path),
		})
	})
}

// checkFormat refuses a data directory of another format version, and
// marks a new one with this version.
func checkFormat(db *pebble.DB) (upgrade bool, err error) {
	v, closer, err := db.Get(formatKey)
	switch {
	case err == nil:
		defer closer.Close()
		switch {
		case len(v) == 8 && binary.BigEndian.Uint64(v) == dataFormat:
			return false, nil
		case len(v) == 8 && binary.BigEndian.Uint64(v) == 2:
			return true, nil
		case len(v) == 8 && binary.BigEndian.Uint64(v) == 3:
			// Format 3 is format 4 without run frames: marked before
			// anything is appended, so that a version reading only 3
			// refuses it from then on.
			return false, db.Set(formatKey, binary.BigEndian.AppendUint64(nil, dataFormat), pebble.Sync)
		}
		return false, fmt.Errorf("data directory format %x, this version reads only formats 2 to %d", v, dataFormat)
	case !errors.Is(err, pebble.ErrNotFound):
		return false, err
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return false, err
	}
	used := it.First()
	if err := it.Close(); err != nil {
		return false, err
	}
	if used {
		return false, errors.New("data directory written by an older version (record data in pebble); this version keeps record data in a record log and cannot read it: move it away or delete it")
	}
	return false, db.Set(formatKey, binary.BigEndian.AppendUint64(nil, dataFormat), pebble.Sync)
}

// upgradeFormat marks a format 2 directory as of this format once its
// record log is open: every record so far has its reference in pebble (format 2
// fsynced them), so the log position is the log's end, and reindexLog
// reads nothing of what is there.
func upgradeFormat(db *pebble.DB, lastSeg uint64, lastLen int64) error {
	b := db.NewBatch()
	defer b.Close()
	if err := b.Set(logPositionKey, encodeLogPosition(lastSeg, lastLen), nil); err != nil {
		return err
	}
	if err := b.Set(formatKey, binary.BigEndian.AppendUint64(nil, dataFormat), nil); err != nil {
		return err
	}
	return db.Apply(b, pebble.Sync)
}

// load reads the catalog (streams, partitions, apps) into memory.
func (s *Server) load() error {
	v, closer, err := s.db.Get(streamCounterKey)
	switch {
	case err == nil:
		if len(v) != 8 {
			_ = closer.Close()
			return errors.New("corrupt stream counter")
		}
		s.nextStreamKey = binary.BigEndian.Uint64(v)
		_ = closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return err
	}

	err = s.scan([]byte{kindStream}, func(k, v []byte) error {
		project, _, ok := splitNamedKey(k)
		if !ok {
			return fmt.Errorf("corrupt stream key %q", k)
		}
		var meta streamMeta
		if err := json.Unmarshal(v, &meta); err != nil {
			return fmt.Errorf("stream %q: %w", k, err)
		}
		st := &stream{project: project, meta: meta, quotaType: meta.StreamType, quotaPartitions: meta.Writable}
		for n := range meta.PartitionCount {
			st.parts = append(st.parts, newPartition(n, newPartitionState()))
		}
		s.streams[catalogKey(project, meta.Name)] = st
		s.streamsByKey[meta.Key] = st
		return nil
	})
	if err != nil {
		return err
	}

	err = s.scan([]byte{kindPartition}, func(k, v []byte) error {
		ps, ok := decodePartitionState(v)
		if len(k) != partitionPrefixLen || !ok {
			return fmt.Errorf("corrupt partition state %q", k)
		}
		st := s.streamsByKey[binary.BigEndian.Uint64(k[1:])]
		n := int32(binary.BigEndian.Uint32(k[9:]))
		if st == nil || n < 0 || int(n) >= len(st.parts) {
			return fmt.Errorf("partition state %q has no stream", k)
		}
		st.parts[n] = newPartition(n, ps)
		return nil
	})
	if err != nil {
		return err
	}

	return s.scan([]byte{kindApp}, func(k, v []byte) error {
		project, name, ok := splitNamedKey(k)
		if !ok {
			return fmt.Errorf("corrupt app key %q", k)
		}
		var app appMeta
		if err := json.Unmarshal(v, &app); err != nil {
			return fmt.Errorf("app %q: %w", k, err)
		}
		app.Name = name
		s.apps[catalogKey(project, name)] = &app
		return nil
	})
}

// scan calls fn for every key with the given prefix, in key order.
func (s *Server) scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			break
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// pebbleLogger routes pebble's messages to zerolog. Pebble expects Fatalf
// not to return; zerolog's Fatal exits the process.
type pebbleLogger struct{ log zerolog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug().Msgf("pebble: "+format, args...)
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error().Msgf("pebble: "+format, args...)
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Fatal().Msgf("pebble: "+format, args...)
}
