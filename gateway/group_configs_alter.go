package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/topics"
)

// groupAlter is one resource's change of a group's configs, as an
// AlterConfigs or IncrementalAlterConfigs request states it: the settable
// share configs change, the timings set by flags stay as they are.
type groupAlter struct {
	gw *Gateway
	// static are the configs the flags set, by name, with their values;
	// the client may list them with those values only.
	static map[string]string
	next   map[string]string
	seen   map[string]bool
}

// settableGroupConfigs are the configs a group may set, sorted.
var settableGroupConfigs = []string{cfgShareAutoOffsetReset, cfgShareIsolationLevel, cfgShareLockDuration}

// errGroupConfigStatic refuses a change of a group config the gateway's
// flags set for every group.
func errGroupConfigStatic(name string) *topics.ConfigError {
	return topics.InvalidRequest("%s is the same for every group on disgw: set it with the gateway's flags (--consumer-group-* and --share-group-*)", name)
}

// config checks that name is a group config listed once.
func (a *groupAlter) config(name string) *topics.ConfigError {
	if a.seen[name] {
		return topics.InvalidRequest("config %s appears more than once", name)
	}
	a.seen[name] = true
	if _, ok := a.static[name]; !ok && !slices.Contains(settableGroupConfigs, name) {
		return topics.InvalidConfig("unknown group config %s", name)
	}
	return nil
}

// set makes name hold v.
func (a *groupAlter) set(name, v string) *topics.ConfigError {
	if cur, ok := a.static[name]; ok {
		if v != cur {
			return errGroupConfigStatic(name)
		}
		return nil
	}
	if err := a.gw.checkGroupConfig(name, v); err != nil {
		return topics.InvalidConfig("%s", err.Error())
	}
	a.next[name] = v
	return nil
}

// revert puts name back to its default.
func (a *groupAlter) revert(name string) { delete(a.next, name) }

// Replace is AlterConfigs: the listed configs take their values (null:
// the default) and every settable one not listed goes back to its
// default.
func (a *groupAlter) Replace(configs []kmsg.AlterConfigsRequestResourceConfig) *topics.ConfigError {
	for _, rc := range configs {
		if cerr := a.config(rc.Name); cerr != nil {
			return cerr
		}
		if rc.Value == nil {
			a.revert(rc.Name)
		} else if cerr := a.set(rc.Name, *rc.Value); cerr != nil {
			return cerr
		}
	}
	for _, name := range settableGroupConfigs {
		if !a.seen[name] {
			a.revert(name)
		}
	}
	return nil
}

// Change is IncrementalAlterConfigs: SET and DELETE; no group config is a
// list, so APPEND and SUBTRACT are refused as Kafka refuses them.
func (a *groupAlter) Change(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) *topics.ConfigError {
	for _, rc := range configs {
		if cerr := a.config(rc.Name); cerr != nil {
			return cerr
		}
		switch rc.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if rc.Value == nil {
				return topics.InvalidRequest("SET of %s has no value", rc.Name)
			}
			if cerr := a.set(rc.Name, *rc.Value); cerr != nil {
				return cerr
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			a.revert(rc.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return topics.InvalidConfig("%s is not a list: only SET and DELETE change it", rc.Name)
		default:
			return topics.InvalidRequest("unknown operation %d on %s", int8(rc.Op), rc.Name)
		}
	}
	return nil
}

// alterGroupConfigs runs one GROUP resource of an AlterConfigs or
// IncrementalAlterConfigs request: fill states the changes, which are
// checked against what DIS holds now (not the cache) and written unless
// validateOnly or nothing changed. One alter of a tenant's group configs
// runs at a time on this gateway.
func (gw *Gateway) alterGroupConfigs(ctx context.Context, tn *tenant, group string, validateOnly bool, fill func(a *groupAlter) *topics.ConfigError) *topics.ConfigError {
	if group == "" {
		return topics.InvalidRequest("a group config resource names a group")
	}
	tn.groupConfigs.alterMu.Lock()
	defer tn.groupConfigs.alterMu.Unlock()
	cur, err := gw.readGroupConfigs(ctx, tn, group)
	if err != nil {
		return &topics.ConfigError{Code: kafkaCodeForDIS(err), Msg: "reading the group's configs from DIS: " + err.Error()}
	}
	a := &groupAlter{gw: gw, static: map[string]string{}, next: maps.Clone(cur), seen: map[string]bool{}}
	entries, err := gw.groupConfigEntries(ctx, tn, group)
	if err != nil {
		return &topics.ConfigError{Code: kafkaCodeForDIS(err), Msg: err.Error()}
	}
	for _, e := range entries {
		if e.ReadOnly {
			a.static[e.Name] = e.Value
		}
	}
	if cerr := fill(a); cerr != nil {
		return cerr
	}
	if b, _ := json.Marshal(storedGroupConfigs{Configs: a.next}); utf8.RuneCount(b) > maxGroupConfigChars {
		return topics.InvalidConfig("the group's configs take %d characters; DIS keeps at most %d", utf8.RuneCount(b), maxGroupConfigChars)
	}
	if validateOnly || maps.Equal(cur, a.next) {
		return nil
	}
	if err := gw.writeGroupConfigs(ctx, tn, group, a.next); err != nil {
		gw.log.Warn().Err(err).Str("group", group).Msg("writing a group's configs to DIS failed")
		return &topics.ConfigError{Code: kafkaCodeForDIS(err), Msg: "writing the group's configs to DIS: " + err.Error()}
	}
	gw.log.Info().Str("group", group).Interface("configs", a.next).Msg("group configs changed")
	return nil
}

// maxGroupConfigChars is DIS's limit on checkpoint metadata, which holds a
// group's configs.
const maxGroupConfigChars = 1000
