package topics

import (
	"context"
	"slices"
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
	if a.seen[name] {
		return nil, InvalidRequest("config %s appears more than once", name)
	}
	a.seen[name] = true
	c := topicConfigNamed(name)
	if c == nil {
		return nil, InvalidConfig("unknown topic config %s", name)
	}
	return c, nil
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
// max.message.bytes and the dis.raw.* policies the alter changes. Each is written with its value, a
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
		{rawHeadersTagKey, curRaw.headers, nextRaw.headers},
		{rawKeysTagKey, curRaw.keys, nextRaw.keys},
	} {
		if t.cur != t.next {
			out = append(out, disclient.Tag{Key: t.key, Value: t.next})
		}
	}
	return out
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
	changed := a.changedTags()
	if len(changed) > 0 {
		if err := a.cfg.CheckSpec(name, &a.next); err != nil {
			return InvalidConfig("%s", err.Error())
		}
	}
	if validateOnly {
		return nil
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
// configs; configs it does not list keep their value.
func (a *Alter) Change(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) *ConfigError {
	for _, rc := range configs {
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
