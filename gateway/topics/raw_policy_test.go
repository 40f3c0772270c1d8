package topics

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Under drop policies (the default) a raw topic writes a record without the
// headers or the key it cannot hold, removes them from the record the read
// cache keeps, and counts them; under refuse it names the policy in the
// refusal. A null value is refused whatever the policies say.
func TestRawPoliciesDropOrRefuse(t *testing.T) {
	headers := []protocol.Header{{Key: "traceparent", Value: []byte("00-1")}, {Key: "type"}}
	for _, c := range []struct {
		name    string
		rec     protocol.Record
		config  string
		headers int
		keyWhy  string
	}{
		{"headers", protocol.Record{Key: []byte("k"), Value: []byte("v"), Headers: headers}, configRawHeaders, 2, ""},
		{"empty key", protocol.Record{Key: []byte{}, Value: []byte("v")}, configRawKeys, 0, "empty key"},
		{"binary key", protocol.Record{Key: []byte{0xff, 0x00}, Value: []byte("v")}, configRawKeys, 0, "UTF-8"},
		{"long key", protocol.Record{Key: bytes.Repeat([]byte("k"), maxRawKeyBytes+1), Value: []byte("v")}, configRawKeys, 0, "at most"},
	} {
		rec := c.rec
		var drops RawDrops
		e, err := ToRawEntry(&rec, "shardId-0000000000", 1<<20, RawSpec{}, &drops)
		if err != nil {
			t.Fatalf("%s, default policy: %v, want it written", c.name, err)
		}
		if string(e.Data) != "v" || rec.Headers != nil {
			t.Errorf("%s: wrote %q, record kept headers %v", c.name, e.Data, rec.Headers)
		}
		if c.keyWhy != "" {
			if e.PartitionKey != "" || rec.Key != nil {
				t.Errorf("%s: partition key %q, record key %v; want none", c.name, e.PartitionKey, rec.Key)
			}
			if drops.KeyRecords != 1 || !strings.Contains(drops.KeyWhy, c.keyWhy) || drops.HeaderRecords != 0 {
				t.Errorf("%s: drops %+v", c.name, drops)
			}
		} else if e.PartitionKey != "k" || drops.HeaderRecords != 1 || drops.Headers != c.headers || drops.KeyRecords != 0 {
			t.Errorf("%s: partition key %q, drops %+v", c.name, e.PartitionKey, drops)
		}

		rec = c.rec
		drops = RawDrops{}
		refuse := RawSpec{headers: policyRefuse, keys: policyRefuse}
		_, err = ToRawEntry(&rec, "shardId-0000000000", 1<<20, refuse, &drops)
		var re *RecordError
		if !errors.As(err, &re) || re.TooLarge || !strings.Contains(re.msg, c.config+" is refuse") {
			t.Errorf("%s, refuse: %v, want a RecordError naming %s", c.name, err, c.config)
		}
		if drops != (RawDrops{}) {
			t.Errorf("%s, refuse: counted %+v", c.name, drops)
		}
	}

	// Each policy covers its own part only.
	rec := protocol.Record{Key: []byte{0xff}, Value: []byte("v"), Headers: headers}
	var drops RawDrops
	if _, err := ToRawEntry(&rec, "shardId-0000000000", 1<<20, RawSpec{headers: policyDrop, keys: policyRefuse}, &drops); err == nil || !strings.Contains(err.Error(), configRawKeys) {
		t.Errorf("headers dropped, binary key refused: %v", err)
	}
	rec = protocol.Record{Key: []byte{0xff}, Value: []byte("v"), Headers: headers}
	if _, err := ToRawEntry(&rec, "shardId-0000000000", 1<<20, RawSpec{headers: policyRefuse, keys: policyDrop}, &drops); err == nil || !strings.Contains(err.Error(), configRawHeaders) {
		t.Errorf("headers refused, binary key dropped: %v", err)
	}
	rec = protocol.Record{Key: []byte("k"), Headers: headers}
	if _, err := ToRawEntry(&rec, "shardId-0000000000", 1<<20, RawSpec{}, &drops); err == nil || !strings.Contains(err.Error(), "null value") {
		t.Errorf("null value under drop policies: %v, want refused", err)
	}

	// Several records: counts per part, and the first record's details.
	drops = RawDrops{}
	for _, r := range []protocol.Record{
		{Value: []byte("a"), Headers: headers[:1]},
		{Key: []byte{}, Value: []byte("b"), Headers: headers},
		{Key: []byte("ok"), Value: []byte("c")},
	} {
		if _, err := ToRawEntry(&r, "shardId-0000000000", 1<<20, RawSpec{}, &drops); err != nil {
			t.Fatal(err)
		}
	}
	if drops.HeaderRecords != 2 || drops.Headers != 1 || drops.KeyRecords != 1 || !strings.Contains(drops.KeyWhy, "empty") {
		t.Errorf("drops over three records: %+v", drops)
	}
}

// The policies are topic configs kept in stream tags: a stream without the
// tags (one created outside the gateway) drops; alters on a raw topic write
// the tags, and a kafka topic, which keeps headers and keys, refuses any
// value but the default.
func TestRawPolicyConfigs(t *testing.T) {
	cfg := testConfigDefaults()
	native := &Meta{Name: "native", RetentionHours: 24, Format: formatFromTags(nil), Raw: rawSpecFromTags(nil)}
	entries := map[string]ConfigEntry{}
	for _, e := range cfg.Entries(native) {
		entries[e.Name] = e
	}
	for _, name := range []string{configRawHeaders, configRawKeys} {
		if e := entries[name]; e.Value != policyDrop || e.Source != kmsg.ConfigSourceDefaultConfig || e.ReadOnly || !strings.Contains(e.Doc, "drop") {
			t.Errorf("untagged stream: %s = %+v, want drop, DEFAULT_CONFIG, alterable, documented", name, e)
		}
	}

	a := newAlter(cfg, native)
	for name, v := range map[string]string{configRawHeaders: policyRefuse, configRawKeys: policyDrop} {
		c, cerr := a.config(name)
		if cerr == nil {
			cerr = a.set(c, v)
		}
		if cerr != nil {
			t.Fatalf("%s=%s: %v", name, v, cerr)
		}
	}
	changed := a.changedTags()
	if len(changed) != 1 || changed[0] != (disclient.Tag{Key: rawHeadersTagKey, Value: policyRefuse}) {
		t.Fatalf("changed tags %+v, want only %s=refuse", changed, rawHeadersTagKey)
	}
	if err := cfg.CheckSpec(native.Name, &a.next); err != nil {
		t.Fatalf("raw topic with refuse: %v", err)
	}
	back := rawSpecFromTags(changed).withDefaults()
	if back != (RawSpec{headers: policyRefuse, keys: policyDrop}) {
		t.Errorf("tags read back as %+v", back)
	}
	if cerr := a.set(topicConfigNamed(configRawKeys), "Drop"); cerr == nil || !strings.Contains(cerr.Msg, "drop or refuse") {
		t.Errorf("dis.raw.keys=Drop: %v, want INVALID_CONFIG naming the values", cerr)
	}

	kafka := &Meta{Name: "k", RetentionHours: 24, Format: FormatKafka}
	ka := newAlter(cfg, kafka)
	if cerr := ka.set(topicConfigNamed(configRawHeaders), policyDrop); cerr != nil || len(ka.changedTags()) != 0 {
		t.Errorf("kafka topic, dis.raw.headers=drop (its value): %v, tags %+v", cerr, ka.changedTags())
	}
	if cerr := ka.set(topicConfigNamed(configRawHeaders), policyRefuse); cerr != nil {
		t.Fatal(cerr)
	}
	if err := cfg.CheckSpec(kafka.Name, &ka.next); err == nil || !strings.Contains(err.Error(), "dis.record.format raw") {
		t.Errorf("kafka topic with dis.raw.headers=refuse: %v, want refused", err)
	}

	var s Spec
	for name, v := range map[string]string{"dis.record.format": "raw", configRawKeys: policyRefuse} {
		if err := s.Apply(name, &v); err != nil {
			t.Fatal(err)
		}
	}
	if tags := s.configTags(); len(tags) != 1 || tags[0] != (disclient.Tag{Key: rawKeysTagKey, Value: policyRefuse}) {
		t.Errorf("created with dis.raw.keys=refuse: tags %+v", tags)
	}
	if bad := rawSpecFromTags([]disclient.Tag{{Key: rawHeadersTagKey, Value: "ignore"}}); bad != (RawSpec{}) {
		t.Errorf("a hand-set tag value read as %+v, want the default", bad)
	}
}
