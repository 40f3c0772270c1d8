package topics

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// Alter collects what one alter request asks of one topic, checking
// every change against topicConfigs before anything reaches DIS. The
// handlers state the request's changes on it (Catalog.Alter's fill) with
// Replace or Change.
type Alter struct {
	cfg       *Config
	name      string
	cur, next Spec
	seen      map[string]bool
}

func newAlter(cfg *Config, t *Meta) *Alter {
	s := specOf(t)
	return &Alter{cfg: cfg, name: t.Name, cur: s, next: s, seen: make(map[string]bool)}
}

// config returns the named config, refusing unknown and repeated names.
func (a *Alter) config(name string) (*topicConfig, *ConfigError) {
	if cerr := a.once(name); cerr != nil {
		return nil, cerr
	}
	c := topicConfigNamed(name)
	if c == nil {
		return nil, InvalidConfig("unknown topic config %s", name)
	}
	return c, nil
}

// once refuses a name the resource has listed already.
func (a *Alter) once(name string) *ConfigError {
	if a.seen[name] {
		return InvalidRequest("config %s appears more than once", name)
	}
	a.seen[name] = true
	return nil
}

// set makes config c hold v. Setting a config to the value it has is
// accepted even when the config cannot change, so that a client may send
// back what DescribeConfigs gave it.
func (a *Alter) set(c *topicConfig, v string) *ConfigError {
	before := c.current(a.cfg, &a.next)
	if c.set == nil {
		if v != before {
			return InvalidConfig("%s is %s on DIS and cannot be changed", c.name, before)
		}
		return nil
	}
	next := a.next
	if err := c.set(&next, v); err != nil {
		return InvalidConfig("%s", err.Error())
	}
	if c.readOnly && c.current(a.cfg, &next) != before {
		return InvalidConfig("%s cannot be changed after creation", c.name)
	}
	a.next = next
	return nil
}

// revert makes config c hold its default.
func (a *Alter) revert(c *topicConfig) *ConfigError {
	return a.set(c, c.def(a.cfg))
}

// changedTags are the stream tags that record the timestamp configs,
// max.message.bytes, a retention.ms below DIS's shortest ("0" for none),
// the dis.raw.* policies and, while the topic is not kept, the keeping
// configs its own stream holds, that the alter changes. Each is written with its value, a
// default one included: the tag then says what a missing tag would.
func (a *Alter) changedTags() []disclient.Tag {
	cur, next := a.cur.Timestamps.withDefaults(), a.next.Timestamps.withDefaults()
	curRaw, nextRaw := a.cur.Raw.withDefaults(), a.next.Raw.withDefaults()
	mmb := topicConfigNamed(configMaxMessageBytes)
	var out []disclient.Tag
	for _, t := range []struct {
		key       string
		cur, next string
	}{
		{timestampTypeTagKey, cur.typ, next.typ},
		{timestampBeforeTagKey, cur.beforeMax, next.beforeMax},
		{timestampAfterTagKey, cur.afterMax, next.afterMax},
		{maxMessageBytesTagKey, mmb.current(a.cfg, &a.cur), mmb.current(a.cfg, &a.next)},
		{retentionMsTagKey, strconv.FormatInt(a.cur.RetentionMs, 10), strconv.FormatInt(a.next.RetentionMs, 10)},
		{rawHeadersTagKey, curRaw.headers, nextRaw.headers},
		{rawKeysTagKey, curRaw.keys, nextRaw.keys},
	} {
		if t.cur != t.next {
			out = append(out, disclient.Tag{Key: t.key, Value: t.next})
		}
	}
	if a.next.Kept() {
		// The keep stream holds them all; the topic's own tags, if it
		// had some, are no longer read.
		return out
	}
	return append(out, changedKeepTags(a.cur.topicKeep(), a.next.topicKeep())...)
}

// Alter runs the topic part of one resource of an AlterConfigs or
// IncrementalAlterConfigs request: fill states the changes on an Alter of
// the topic as DIS describes it now, then the new stream shape is written
// to DIS unless validateOnly. Every change is checked before the first
// reaches DIS, so a refused request changes nothing.
func (c *Catalog) Alter(ctx context.Context, name string, validateOnly bool, fill func(a *Alter) *ConfigError) *ConfigError {
	t, err := c.Refresh(ctx, name)
	if err != nil {
		return c.LookupError(name, err)
	}
	a := newAlter(&c.d.Config, t)
	if cerr := fill(a); cerr != nil {
		return cerr
	}
	if a.cur.Kept() && !a.next.Kept() {
		return InvalidConfig("topic '%s' is kept (cleanup.policy includes compact, or retention.ms is -1 or over 72 hours) and cannot stop being kept: "+
			"what it keeps beyond DIS's retention would be lost; delete and create it again instead", name)
	}
	changed := a.changedTags()
	var keepChanged []disclient.Tag
	if a.cur.Kept() {
		keepChanged = changedKeepTags(a.cur.Keep, a.next.Keep)
	}
	makeKept := !a.cur.Kept() && a.next.Kept()
	if len(changed) > 0 || len(keepChanged) > 0 || makeKept || a.next.RetentionHours != a.cur.RetentionHours {
		if err := a.cfg.CheckSpec(name, &a.next); err != nil {
			return InvalidConfig("%s", err.Error())
		}
	}
	if validateOnly {
		return nil
	}
	if cerr := c.alterKeep(ctx, t, a, makeKept, keepChanged); cerr != nil {
		return cerr
	}
	if len(changed) > 0 {
		err := c.d.DIS.UpdateStreamTags(ctx, t.StreamID, &disclient.StreamTagsRequest{Action: disclient.TagActionCreate, Tags: changed})
		c.Invalidate(name)
		if err != nil {
			c.d.Log.Warn().Err(err).Str("topic", name).Msg("changing the stream's config tags failed")
			return &ConfigError{Code: c.d.KafkaCode(err), Msg: err.Error()}
		}
		c.d.Log.Info().Str("topic", name).Str(configTimestampType, a.next.Timestamps.withDefaults().typ).
			Str(configTimestampBefore, a.next.Timestamps.withDefaults().beforeMax).
			Str(configTimestampAfter, a.next.Timestamps.withDefaults().afterMax).
			Str(configMaxMessageBytes, topicConfigNamed(configMaxMessageBytes).current(a.cfg, &a.next)).
			Str(configRawHeaders, a.next.Raw.withDefaults().headers).Str(configRawKeys, a.next.Raw.withDefaults().keys).Msg("changed topic configs")
	}
	if a.next.RetentionHours == a.cur.RetentionHours {
		return nil
	}
	hours := a.next.RetentionHours
	err = c.d.DIS.UpdateStream(ctx, &disclient.UpdateStreamRequest{StreamName: t.Stream, DataDuration: &hours})
	c.Invalidate(name)
	if err != nil {
		c.d.Log.Warn().Err(err).Str("topic", name).Msg("UpdateStream failed")
		return &ConfigError{Code: c.d.KafkaCode(err), Msg: err.Error()}
	}
	c.d.Log.Info().Str("topic", name).Int32("retention_hours", hours).Msg("changed topic retention")
	return nil
}

// alterKeep writes what an alter changes of a topic's keep stream before
// the topic's own stream changes: a topic made kept gets its keep stream,
// a kept one the keep stream's changed tags.
func (c *Catalog) alterKeep(ctx context.Context, t *Meta, a *Alter, makeKept bool, changed []disclient.Tag) *ConfigError {
	var err error
	switch {
	case makeKept:
		err = c.createKeepStream(ctx, t.Stream, int32(len(t.Partitions)), &a.next, true)
	case len(changed) > 0:
		err = c.d.DIS.UpdateStreamTags(ctx, t.keepStreamID, &disclient.StreamTagsRequest{Action: disclient.TagActionCreate, Tags: changed})
	default:
		return nil
	}
	c.Invalidate(t.Name)
	if err != nil {
		c.d.Log.Warn().Err(err).Str("topic", t.Name).Msg("writing the topic's keep stream failed")
		return &ConfigError{Code: c.d.KafkaCode(err), Msg: err.Error()}
	}
	p := a.next.Keep.policy(KeepStreamName(t.Stream))
	c.d.Log.Info().Str("topic", t.Name).Bool("compact", p.Compact).Bool("delete", p.Delete).Int64(configRetentionMs, p.RetentionMs).
		Int64(configRetentionBytes, p.RetentionBytes).Int64(configDeleteRetention, p.DeleteRetentionMs).
		Int64(configMinCompactionLag, p.MinCompactionLagMs).Int64(configMaxCompactionLag, p.MaxCompactionLagMs).
		Float64(configMinCleanableRatio, p.MinCleanableDirtyRatio).Bool("new_keep_stream", makeKept).Msg("changed the topic's keeping configs")
	return nil
}

// Replace states the whole new configuration an AlterConfigs resource
// gives: as in Kafka, an alterable config it does not list goes back to its
// default, and so does one listed with a null value.
func (a *Alter) Replace(configs []kmsg.AlterConfigsRequestResourceConfig) *ConfigError {
	for _, rc := range configs {
		c, cerr := a.config(rc.Name)
		if cerr != nil {
			return cerr
		}
		if rc.Value == nil {
			cerr = a.revert(c)
		} else {
			cerr = a.set(c, *rc.Value)
		}
		if cerr != nil {
			return cerr
		}
	}
	for i := range topicConfigs {
		c := &topicConfigs[i]
		if c.readOnly || a.seen[c.name] {
			continue
		}
		if cerr := a.revert(c); cerr != nil {
			return cerr
		}
	}
	return nil
}

// Change states each change an IncrementalAlterConfigs resource lists:
// SET, DELETE (back to the default), or APPEND and SUBTRACT for list
// configs; configs it does not list keep their value. A DELETE of a name
// not in topicConfigs changes nothing.
func (a *Alter) Change(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) *ConfigError {
	for _, rc := range configs {
		if rc.Op == kmsg.IncrementalAlterConfigOpDelete && topicConfigNamed(rc.Name) == nil {
			// Kafka takes it as removing an override that is not there,
			// whatever the name. MirrorMaker 2 sends a DELETE for every
			// config its source topic has at the default, among them
			// Kafka's that disgw does not report (flush.messages, Kafka
			// 4.4's errors.deadletterqueue.group.enable): refusing one
			// would fail its whole config sync.
			if cerr := a.once(rc.Name); cerr != nil {
				return cerr
			}
			continue
		}
		c, cerr := a.config(rc.Name)
		if cerr != nil {
			return cerr
		}
		if rc.Op == kmsg.IncrementalAlterConfigOpDelete {
			if cerr := a.revert(c); cerr != nil {
				return cerr
			}
			continue
		}
		if rc.Value == nil {
			return InvalidRequest("config %s: a null value is only allowed with DELETE", rc.Name)
		}
		v := *rc.Value
		switch rc.Op {
		case kmsg.IncrementalAlterConfigOpSet:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !c.list() {
				return InvalidConfig("config %s is not a list: only SET and DELETE apply", c.name)
			}
			v = changedList(c.current(a.cfg, &a.next), v, rc.Op == kmsg.IncrementalAlterConfigOpAppend)
		default:
			return InvalidRequest("config %s: unknown operation %d", rc.Name, int8(rc.Op))
		}
		if cerr := a.set(c, v); cerr != nil {
			return cerr
		}
	}
	return nil
}

// changedList appends the comma-separated values to list, skipping those
// already there, or removes them from it.
func changedList(list, values string, add bool) string {
	var items []string
	if list != "" {
		items = strings.Split(list, ",")
	}
	for _, v := range strings.Split(values, ",") {
		v = strings.TrimSpace(v)
		if add && !slices.Contains(items, v) {
			items = append(items, v)
		}
		if !add {
			items = slices.DeleteFunc(items, func(s string) bool { return s == v })
		}
	}
	return strings.Join(items, ",")
}
