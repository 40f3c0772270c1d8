package gateway

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/topics"
)

func TestBrokerConfigTableIsSorted(t *testing.T) {
	if !slices.IsSortedFunc(brokerConfigs, func(a, b brokerConfig) int { return strings.Compare(a.name, b.name) }) {
		t.Error("brokerConfigs must be sorted by name")
	}
}

// A topic config's synonyms list its own value, then the default, and its
// documentation when asked for.
func TestDescribedConfig(t *testing.T) {
	cfg := &Config{}
	cfg.setDefaults()
	tc := cfg.topicsConfig()
	byName := map[string]topics.ConfigEntry{}
	for _, e := range tc.Entries(&topics.Meta{Name: "t", RetentionHours: 48, Format: FormatRaw, StreamType: disclient.StreamTypeCommon}) {
		byName[e.Name] = e
	}
	dyn := describedConfig(byName["retention.ms"], true, true)
	if len(dyn.ConfigSynonyms) != 2 || *dyn.ConfigSynonyms[1].Value != "86400000" || dyn.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.ms synonyms = %+v, want itself then the 24 h default", dyn.ConfigSynonyms)
	}
	if dyn.Documentation == nil || dyn.IsDefault {
		t.Errorf("retention.ms: documentation %v, is_default %v", dyn.Documentation, dyn.IsDefault)
	}
	if def := describedConfig(byName["segment.bytes"], false, false); def.ConfigSynonyms != nil || def.Documentation != nil || !def.IsDefault {
		t.Errorf("segment.bytes without synonyms or docs: %+v", def)
	}
}
