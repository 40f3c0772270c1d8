package topics

import (
	"fmt"

	"github.com/disgw/disgw/disclient"
)

// What a raw topic does with the parts of a Kafka record a DIS record cannot
// hold (docs/record-formats.md): its headers, and a key that is not a
// non-empty UTF-8 string of at most maxRawKeyBytes. drop writes the record
// without them, as Huawei's DIS Kafka adapter does, so producers that add
// headers (tracing, typed serializers) work on streams that existed in DIS
// before the gateway; refuse fails the batch with INVALID_RECORD.
const (
	configRawHeaders = "dis.raw.headers"
	configRawKeys    = "dis.raw.keys"

	policyDrop   = "drop"
	policyRefuse = "refuse"

	// The stream tags that record the two policies; a stream without one
	// (every stream created outside the gateway) drops.
	rawHeadersTagKey = "disgw-raw-headers"
	rawKeysTagKey    = "disgw-raw-keys"
)

// RawSpec is a topic's dis.raw.* policies, each "" (the default, drop),
// policyDrop or policyRefuse. Meta carries it for ToRawEntry; its fields
// stay here, where the config table and the stream tags read and write them.
type RawSpec struct {
	headers, keys string
}

// withDefaults fills the policies left unset with drop.
func (rs RawSpec) withDefaults() RawSpec {
	if rs.headers == "" {
		rs.headers = policyDrop
	}
	if rs.keys == "" {
		rs.keys = policyDrop
	}
	return rs
}

// tags are the stream tags that record rs, one per policy set.
func (rs RawSpec) tags() []disclient.Tag {
	var out []disclient.Tag
	for _, t := range []disclient.Tag{{Key: rawHeadersTagKey, Value: rs.headers}, {Key: rawKeysTagKey, Value: rs.keys}} {
		if t.Value != "" {
			out = append(out, t)
		}
	}
	return out
}

// parseRawPolicy checks the value of the policy config name.
func parseRawPolicy(name, v string) (string, error) {
	if v != policyDrop && v != policyRefuse {
		return "", fmt.Errorf("%s must be %s or %s", name, policyDrop, policyRefuse)
	}
	return v, nil
}

// rawSpecFromTags reads the policies a stream's tags record; a tag whose
// value is neither policy (set by hand on DIS) is ignored, leaving drop.
func rawSpecFromTags(tags []disclient.Tag) RawSpec {
	var rs RawSpec
	for _, tg := range tags {
		switch tg.Key {
		case rawHeadersTagKey:
			rs.headers, _ = parseRawPolicy(configRawHeaders, tg.Value)
		case rawKeysTagKey:
			rs.keys, _ = parseRawPolicy(configRawKeys, tg.Value)
		}
	}
	return rs
}

// RawDrops is what the records of one produce partition lost to drop
// policies, for the counters and the producer's warning: HeaderRecords and
// KeyRecords count the records that lost headers or their key.
type RawDrops struct {
	HeaderRecords, KeyRecords int
	// Headers is how many headers the first record that lost them had,
	// KeyWhy why the first dropped key could not be kept.
	Headers int
	KeyWhy  string
}

// add records what one record lost.
func (d *RawDrops) add(headers int, keyWhy string) {
	if headers > 0 {
		if d.HeaderRecords == 0 {
			d.Headers = headers
		}
		d.HeaderRecords++
	}
	if keyWhy != "" {
		if d.KeyRecords == 0 {
			d.KeyWhy = keyWhy
		}
		d.KeyRecords++
	}
}
