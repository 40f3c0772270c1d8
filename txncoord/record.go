package txncoord

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// recordVersion is the encoding's version; Decode refuses any other, so a
// gateway never misreads a record written by a newer one.
const recordVersion = 1

// wireRecord is Record as encoded: JSON with short names, the state by its
// Kafka name so the topic reads plainly.
type wireRecord struct {
	V                int                   `json:"v"`
	TxnID            string                `json:"id"`
	ProducerID       int64                 `json:"pid"`
	Epoch            int16                 `json:"epoch"`
	LastProducerID   int64                 `json:"lastPid"`
	LastEpoch        int16                 `json:"lastEpoch"`
	NextProducerID   int64                 `json:"nextPid"`
	TimeoutMillis    int32                 `json:"timeoutMs"`
	State            string                `json:"state"`
	Partitions       []wirePartition       `json:"partitions,omitempty"`
	Groups           []string              `json:"groups,omitempty"`
	PendingOffsets   map[string][]wireOffs `json:"offsets,omitempty"`
	StartMillis      int64                 `json:"startMs"`
	UpdateMillis     int64                 `json:"updateMs"`
	Version2         bool                  `json:"tv2,omitempty"`
	CoordinatorEpoch int32                 `json:"coordEpoch"`
}

type wirePartition struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

type wireOffs struct {
	Topic       string  `json:"t"`
	Partition   int32   `json:"p"`
	Offset      int64   `json:"o"`
	LeaderEpoch int32   `json:"le"`
	Metadata    *string `json:"m,omitempty"`
}

// Encode is the record's value in its state partition.
func (r *Record) Encode() []byte {
	w := wireRecord{
		V: recordVersion, TxnID: r.TxnID, ProducerID: r.ProducerID, Epoch: r.Epoch,
		LastProducerID: r.LastProducerID, LastEpoch: r.LastEpoch, NextProducerID: r.NextProducerID,
		TimeoutMillis: r.TimeoutMillis, State: r.State.String(), Groups: r.Groups,
		StartMillis: r.StartMillis, UpdateMillis: r.UpdateMillis, Version2: r.Version2,
		CoordinatorEpoch: r.CoordinatorEpoch,
	}
	for _, tp := range r.Partitions {
		w.Partitions = append(w.Partitions, wirePartition(tp))
	}
	if len(r.PendingOffsets) > 0 {
		w.PendingOffsets = make(map[string][]wireOffs, len(r.PendingOffsets))
		for g, offs := range r.PendingOffsets {
			for _, o := range offs {
				w.PendingOffsets[g] = append(w.PendingOffsets[g], wireOffs(o))
			}
		}
	}
	b, err := json.Marshal(&w)
	if err != nil {
		// Only strings, numbers and slices of them: cannot fail.
		panic(err)
	}
	return b
}

// Decode reads a record Encode wrote, refusing anything else with an
// error: another version, an unknown state, a missing id.
func Decode(b []byte) (Record, error) {
	var w wireRecord
	if err := json.Unmarshal(b, &w); err != nil {
		return Record{}, fmt.Errorf("txncoord: decoding a state record: %w", err)
	}
	if w.V != recordVersion {
		return Record{}, fmt.Errorf("txncoord: state record version %d, want %d", w.V, recordVersion)
	}
	if w.TxnID == "" {
		return Record{}, errors.New("txncoord: state record without a transactional id")
	}
	st, ok := stateByName(w.State)
	if !ok {
		return Record{}, fmt.Errorf("txncoord: state record with unknown state %q", w.State)
	}
	r := Record{
		TxnID: w.TxnID, ProducerID: w.ProducerID, Epoch: w.Epoch,
		LastProducerID: w.LastProducerID, LastEpoch: w.LastEpoch, NextProducerID: w.NextProducerID,
		TimeoutMillis: w.TimeoutMillis, State: st, Groups: w.Groups,
		StartMillis: w.StartMillis, UpdateMillis: w.UpdateMillis, Version2: w.Version2,
		CoordinatorEpoch: w.CoordinatorEpoch,
	}
	for _, tp := range w.Partitions {
		r.Partitions = append(r.Partitions, TopicPartition(tp))
	}
	if len(r.Groups) == 0 {
		r.Groups = nil
	}
	for g, offs := range w.PendingOffsets {
		for _, o := range offs {
			if r.PendingOffsets == nil {
				r.PendingOffsets = make(map[string][]Offset, len(w.PendingOffsets))
			}
			r.PendingOffsets[g] = append(r.PendingOffsets[g], Offset(o))
		}
	}
	return r, nil
}

// normalize sorts and deduplicates a loaded record's partitions and
// offsets, which the coordinator searches by halves: a record from
// elsewhere than Encode need not be in order.
func (r *Record) normalize() {
	slices.SortFunc(r.Partitions, compareTP)
	r.Partitions = slices.CompactFunc(r.Partitions, func(a, b TopicPartition) bool { return a == b })
	for g, offs := range r.PendingOffsets {
		slices.SortStableFunc(offs, compareOffset)
		r.PendingOffsets[g] = slices.CompactFunc(offs, func(a, b Offset) bool { return compareOffset(a, b) == 0 })
	}
}
