package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/groups"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
)

// Group configs set per group (docs/design.md §14): share groups'
// share.auto.offset.reset, share.isolation.level and
// share.record.lock.duration.ms. They are kept in DIS, as the metadata of
// the LAST_READ checkpoint of the group's config app (groups.ConfigApp) on
// partition 0 of groupConfigStream, so every gateway reads the same; a
// group without any has no config app. A gateway caches what it read for
// groupConfigTTL, and what it wrote until the next read, so its own
// change takes effect at once and another gateway's within the TTL.

// The group configs a client may set.
const (
	cfgShareAutoOffsetReset = "share.auto.offset.reset"
	cfgShareIsolationLevel  = "share.isolation.level"
	cfgShareLockDuration    = "share.record.lock.duration.ms"
)

// groupConfigStream is the DIS stream group configs are checkpoints of:
// one partition that nothing writes, so sequence number 0 is always in
// its valid range. Its name begins with the encoded-name prefix and it has
// no topic name tags, so it is no topic (topics.Catalog lists none such).
const groupConfigStream = "disgw-group-configs"

// groupConfigTTL is how long a gateway trusts group configs it read: the
// longest another gateway's change takes to be seen here.
const groupConfigTTL = time.Second

// minShareLockDuration is the least share.record.lock.duration.ms Kafka
// takes (sharestate's floor for the broker default too).
const minShareLockDuration = time.Second

// groupConfigStore is one tenant's group configs as this gateway knows
// them.
type groupConfigStore struct {
	// alterMu makes one alter at a time read, change and write a group's
	// configs, so two on this gateway never lose one another's change.
	alterMu sync.Mutex
	// streamReady is set once groupConfigStream is known to exist.
	streamReady atomic.Bool

	mu    sync.Mutex
	cache map[string]cachedGroupConfigs
}

// cachedGroupConfigs is a group's dynamic configs and when they were read
// or written.
type cachedGroupConfigs struct {
	configs map[string]string
	at      time.Time
}

// storedGroupConfigs is the checkpoint metadata: the configs set, by
// name.
type storedGroupConfigs struct {
	Configs map[string]string `json:"configs"`
}

// cached returns group's configs if read within groupConfigTTL.
func (s *groupConfigStore) cached(group string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[group]
	if !ok || time.Since(c.at) >= groupConfigTTL {
		return nil, false
	}
	return c.configs, true
}

// remember caches group's configs, dropping expired entries when the
// cache has grown, so it holds about the groups asked for in the last TTL.
func (s *groupConfigStore) remember(group string, configs map[string]string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = make(map[string]cachedGroupConfigs)
	}
	if len(s.cache) >= 1024 {
		maps.DeleteFunc(s.cache, func(_ string, c cachedGroupConfigs) bool { return now.Sub(c.at) >= groupConfigTTL })
	}
	s.cache[group] = cachedGroupConfigs{configs: configs, at: now}
}

// groupConfigs returns tn's dynamic configs of group, by name: cached, or
// read from DIS.
func (gw *Gateway) groupConfigs(ctx context.Context, tn *tenant, group string) (map[string]string, error) {
	if c, ok := tn.groupConfigs.cached(group); ok {
		return c, nil
	}
	c, err := gw.readGroupConfigs(ctx, tn, group)
	if err != nil {
		return nil, err
	}
	tn.groupConfigs.remember(group, c)
	return c, nil
}

// readGroupConfigs reads group's configs from DIS; none kept is no error.
func (gw *Gateway) readGroupConfigs(ctx context.Context, tn *tenant, group string) (map[string]string, error) {
	cp, err := tn.dis.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: groups.ConfigApp(group), StreamName: groupConfigStream,
		PartitionID: disclient.PartitionID(0), CheckpointType: disclient.CheckpointLastRead})
	switch {
	case disclient.IsCode(err, disclient.CodeAppNotFound), disclient.IsCode(err, disclient.CodeStreamNotFound), disclient.IsCode(err, disclient.CodeNoCheckpoint):
		return map[string]string{}, nil
	case err != nil:
		return nil, err
	case cp.Metadata == "":
		return map[string]string{}, nil
	}
	var st storedGroupConfigs
	if err := json.Unmarshal([]byte(cp.Metadata), &st); err != nil {
		return nil, fmt.Errorf("group %q: configs kept in DIS do not decode: %w", group, err)
	}
	if st.Configs == nil {
		st.Configs = map[string]string{}
	}
	return st.Configs, nil
}

// writeGroupConfigs keeps configs as group's in DIS; with none it deletes
// the group's config app.
func (gw *Gateway) writeGroupConfigs(ctx context.Context, tn *tenant, group string, configs map[string]string) error {
	app := groups.ConfigApp(group)
	if len(configs) == 0 {
		err := tn.dis.DeleteApp(ctx, app)
		tn.knownApps.Delete(app)
		if err != nil && !disclient.IsCode(err, disclient.CodeAppNotFound) {
			return err
		}
		tn.groupConfigs.remember(group, configs)
		return nil
	}
	b, err := json.Marshal(storedGroupConfigs{Configs: configs})
	if err != nil {
		return err
	}
	if err := gw.ensureGroupConfigStream(ctx, tn); err != nil {
		return err
	}
	if err := gw.groups.EnsureApp(ctx, tn, app); err != nil {
		return err
	}
	req := &disclient.CommitCheckpointRequest{AppName: app, StreamName: groupConfigStream, PartitionID: disclient.PartitionID(0),
		CheckpointType: disclient.CheckpointLastRead, SequenceNumber: "0", Metadata: string(b)}
	err = tn.dis.CommitCheckpoint(ctx, req)
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		// Another gateway deleted the app since this one saw it.
		tn.knownApps.Delete(app)
		if err = gw.groups.EnsureApp(ctx, tn, app); err == nil {
			err = tn.dis.CommitCheckpoint(ctx, req)
		}
	}
	if err != nil {
		return err
	}
	tn.groupConfigs.remember(group, configs)
	return nil
}

// ensureGroupConfigStream creates groupConfigStream unless it exists.
func (gw *Gateway) ensureGroupConfigStream(ctx context.Context, tn *tenant) error {
	if tn.groupConfigs.streamReady.Load() {
		return nil
	}
	hours := int32(24)
	err := tn.dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: groupConfigStream, PartitionCount: 1,
		StreamType: disclient.StreamTypeCommon, DataType: disclient.DataTypeBlob, DataDuration: &hours})
	if err != nil && !disclient.IsCode(err, disclient.CodeStreamExists) {
		return err
	}
	tn.groupConfigs.streamReady.Store(true)
	return nil
}

// shareConfig is group's configs as share fetches use them, checked again:
// a value kept in DIS may predate a change of
// --share-max-record-lock-duration.
func (gw *Gateway) shareConfig(ctx context.Context, tn *tenant, group string) (plog.ShareGroupConfig, error) {
	configs, err := gw.groupConfigs(ctx, tn, group)
	if err != nil {
		return plog.ShareGroupConfig{}, err
	}
	var sc plog.ShareGroupConfig
	if v, ok := configs[cfgShareAutoOffsetReset]; ok {
		if sc.Reset, sc.ResetDuration, err = parseShareReset(v); err != nil {
			return plog.ShareGroupConfig{}, err
		}
	}
	sc.ReadCommitted = configs[cfgShareIsolationLevel] == "read_committed"
	if v, ok := configs[cfgShareLockDuration]; ok {
		if sc.LockDuration, err = gw.parseShareLockDuration(v); err != nil {
			return plog.ShareGroupConfig{}, err
		}
	}
	return sc, nil
}

// checkGroupConfig reports why v is no value of the settable group config
// name, or nil.
func (gw *Gateway) checkGroupConfig(name, v string) error {
	switch name {
	case cfgShareAutoOffsetReset:
		_, _, err := parseShareReset(v)
		return err
	case cfgShareIsolationLevel:
		if v != "read_uncommitted" && v != "read_committed" {
			return fmt.Errorf("%s must be read_uncommitted or read_committed, not %q", name, v)
		}
		return nil
	case cfgShareLockDuration:
		_, err := gw.parseShareLockDuration(v)
		return err
	}
	return fmt.Errorf("%s cannot be set", name)
}

// parseShareLockDuration reads share.record.lock.duration.ms, which Kafka
// bounds by the broker's least lock duration and
// group.share.max.record.lock.duration.ms.
func (gw *Gateway) parseShareLockDuration(v string) (time.Duration, error) {
	ms, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s must be an integer number of milliseconds, not %q", cfgShareLockDuration, v)
	}
	d, most := time.Duration(ms)*time.Millisecond, gw.cfg.ShareLimits.MaxLockDuration
	if d < minShareLockDuration || d > most {
		return 0, fmt.Errorf("%s must be %d to %d (group.share.max.record.lock.duration.ms), not %d",
			cfgShareLockDuration, minShareLockDuration.Milliseconds(), most.Milliseconds(), ms)
	}
	return d, nil
}

// parseShareReset reads share.auto.offset.reset: latest, earliest or
// by_duration:<ISO-8601 duration>, not negative, as Kafka takes them
// (keywords in any case).
func parseShareReset(v string) (plog.ShareReset, time.Duration, error) {
	const byDuration = "by_duration:"
	switch {
	case strings.EqualFold(v, "latest"):
		return plog.ShareResetLatest, 0, nil
	case strings.EqualFold(v, "earliest"):
		return plog.ShareResetEarliest, 0, nil
	case len(v) > len(byDuration) && strings.EqualFold(v[:len(byDuration)], byDuration):
		d, err := parseISODuration(v[len(byDuration):])
		if err != nil {
			return 0, 0, fmt.Errorf("%s %q: %w", cfgShareAutoOffsetReset, v, err)
		}
		if d < 0 {
			return 0, 0, fmt.Errorf("%s %q: the duration is negative", cfgShareAutoOffsetReset, v)
		}
		return plog.ShareResetByDuration, d, nil
	}
	return 0, 0, fmt.Errorf("%s must be latest, earliest or by_duration:<ISO-8601 duration>, not %q", cfgShareAutoOffsetReset, v)
}

// isoDuration is the form java.time.Duration.parse takes, which Kafka
// reads by_duration with: PnDTnHnMn.nS, each number signed, the whole
// signed too, letters in any case.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration reads an ISO-8601 duration of days, hours, minutes and
// seconds, as Java does.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || m[2] == "" && m[3] == "" || m[3] != "" && m[4] == "" && m[5] == "" && m[6] == "" {
		return 0, fmt.Errorf("%q is no ISO-8601 duration such as PT1H or P1DT12H", s)
	}
	var total time.Duration
	add := func(num string, unit time.Duration) error {
		if num == "" {
			return nil
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > int64(1<<62)/int64(unit) || n < -int64(1<<62)/int64(unit) {
			return fmt.Errorf("%q is out of range", s)
		}
		total += time.Duration(n) * unit
		return nil
	}
	for _, p := range []struct {
		num  string
		unit time.Duration
	}{{m[2], 24 * time.Hour}, {m[4], time.Hour}, {m[5], time.Minute}, {m[6], time.Second}} {
		if err := add(p.num, p.unit); err != nil {
			return 0, err
		}
	}
	if frac := m[7]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[6], "-") {
			ns = -ns
		}
		total += time.Duration(ns)
	}
	if m[1] == "-" {
		total = -total
	}
	return total, nil
}

// groupConfigEntries reports the configs of a group (the GROUP resource,
// KIP-848 and KIP-932): the consumer and share timings the gateway's
// flags set for every group, and the share configs set for this one
// (DYNAMIC_GROUP_CONFIG) or at their defaults. A group need not exist to
// have them.
func (gw *Gateway) groupConfigEntries(ctx context.Context, tn *tenant, group string) ([]topics.ConfigEntry, error) {
	set, err := gw.groupConfigs(ctx, tn, group)
	if err != nil {
		return nil, err
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	static := func(name string, d time.Duration, doc string) topics.ConfigEntry {
		return topics.ConfigEntry{Name: name, Value: ms(d), Def: ms(d), Source: kmsg.ConfigSourceDefaultConfig, ReadOnly: true, Type: kmsg.ConfigTypeInt, Doc: doc}
	}
	dynamic := func(name, def string, typ kmsg.ConfigType, doc string) topics.ConfigEntry {
		e := topics.ConfigEntry{Name: name, Value: def, Def: def, Source: kmsg.ConfigSourceDefaultConfig, Type: typ, Doc: doc}
		if v, ok := set[name]; ok {
			e.Value, e.Source = v, kmsg.ConfigSourceGroupConfig
		}
		return e
	}
	cSession, cHeartbeat := gw.groups.ConsumerTimings()
	sSession, sHeartbeat, _ := gw.groups.ShareSettings()
	return []topics.ConfigEntry{
		static("consumer.heartbeat.interval.ms", cHeartbeat, "Heartbeat interval told to consumer-protocol members."),
		static("consumer.session.timeout.ms", cSession, "Consumer-protocol members silent this long are removed."),
		dynamic(cfgShareAutoOffsetReset, "latest", kmsg.ConfigTypeString, "Where a share group starts reading a partition it has no state for: latest, earliest or by_duration:<ISO-8601 duration>."),
		static("share.heartbeat.interval.ms", sHeartbeat, "Heartbeat interval told to share group members."),
		dynamic(cfgShareIsolationLevel, "read_uncommitted", kmsg.ConfigTypeString, "read_committed delivers no records of aborted or open transactions to the share group."),
		dynamic(cfgShareLockDuration, ms(gw.cfg.ShareLimits.LockDuration), kmsg.ConfigTypeInt, "How long a share group member holds a record it took."),
		static("share.session.timeout.ms", sSession, "Share group members silent this long are removed and their records released."),
	}, nil
}
