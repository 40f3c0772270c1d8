// Package keep is the logic of kept topics (docs/design.md §12): the
// generations of a partition's long-lived records in its keep stream, which
// of them is current, when to write the next one and which records it keeps.
// It is pure: no goroutines, clock or DIS calls; the partition log feeds it
// what it read and does what it decides.
package keep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// CommitKey is the DIS partition_key of a commit record, which no batch of
// a kafka-format stream carries (record-envelope.md), so a reader tells the
// two apart without parsing.
const CommitKey = "disgw-keep-commit"

// commitMagic starts a commit record's data: the format and its version.
var commitMagic = []byte("disgw-keep/1\n")

// Commit is a generation's commit record: the record, written after the
// generation's batches, that makes it a candidate for current. It names the
// commit it replaces, so that of two gateways building on the same commit
// only the first to finish makes its generation current (Resolve).
type Commit struct {
	// Gen counts the partition's generations from 1.
	Gen int64 `json:"gen"`
	// Prev is the sequence number of the commit this one replaces, -1 for
	// the partition's first.
	Prev int64 `json:"prev"`
	// First is the sequence number of the generation's first batch; the
	// batches lie in [First, the commit's own sequence number), in offset
	// order. A generation with no batch has First at the commit.
	First int64 `json:"first"`
	// LogStart is the partition's log start when the generation was made:
	// offsets below it are gone.
	LogStart int64 `json:"log_start"`
	// Cut is the first offset the generation does not hold: readers take
	// Cut on from the topic's own stream.
	Cut int64 `json:"cut"`
	// Clean is the first offset not compacted yet: the generation holds
	// [LogStart, Clean) compacted and [Clean, Cut) as written. Equal to
	// Cut unless the key map filled up; LogStart on a delete-only topic.
	Clean int64 `json:"clean"`
	// Compacted says when each range of offsets below Clean was first
	// compacted, in ascending order, for tombstones' delete.retention.ms.
	Compacted []Span `json:"compacted,omitempty"`
	// StartedMs is when the rewrite that wrote the generation began: every
	// record the partition depends on after this commit was written to DIS
	// at or after it, so the next rewrite is due half a DIS retention
	// later.
	StartedMs int64 `json:"started_ms"`
	// Batches, KafkaRecords and Bytes count what the generation holds,
	// for metrics.
	Batches      int64 `json:"batches"`
	KafkaRecords int64 `json:"kafka_records"`
	Bytes        int64 `json:"bytes"`
	// Records is how many DIS records the batches take (a batch larger
	// than one DIS record takes several): the commit lands at First +
	// Records when nobody else wrote in between, and a commit elsewhere
	// is not whole, since its run holds someone else's records.
	Records int64 `json:"records"`
	// Marks place some of the generation's batches, ascending, so that a
	// reader seeks to an offset with one read rather than reading the
	// generation from its start (StartSeq).
	Marks []Mark `json:"marks,omitempty"`
	// Writer names the gateway that wrote it, for logs.
	Writer string `json:"writer,omitempty"`
}

// Mark is where a batch of a generation is: the sequence number of its
// first DIS record and its base offset.
type Mark struct {
	Offset int64 `json:"o"`
	Seq    int64 `json:"s"`
}

// Span is a range of offsets ending before End (it starts where the span
// before it ends, or at the log start), first compacted at CompactedMs.
type Span struct {
	End         int64 `json:"end"`
	CompactedMs int64 `json:"compacted_ms"`
}

// Marshal encodes c as a commit record's data.
func (c *Commit) Marshal() []byte {
	b, _ := json.Marshal(c)
	return append(append([]byte{}, commitMagic...), b...)
}

// ParseCommit decodes a commit record's data and checks that it is
// consistent with itself; seq is the record's sequence number.
func ParseCommit(data []byte, seq int64) (*Commit, error) {
	rest, ok := bytes.CutPrefix(data, commitMagic)
	if !ok {
		return nil, errors.New("keep: not a commit record")
	}
	var c Commit
	if err := json.Unmarshal(rest, &c); err != nil {
		return nil, fmt.Errorf("keep: commit record: %w", err)
	}
	if err := c.check(seq); err != nil {
		return nil, err
	}
	return &c, nil
}

// check refuses a commit whose fields cannot hold together.
func (c *Commit) check(seq int64) error {
	switch {
	case c.Gen < 1:
		return fmt.Errorf("keep: commit at %d: generation %d", seq, c.Gen)
	case c.Prev >= c.First || c.First > seq || c.Prev < -1:
		return fmt.Errorf("keep: commit at %d: previous %d, first batch %d", seq, c.Prev, c.First)
	case c.LogStart < 0 || c.LogStart > c.Clean || c.Clean > c.Cut:
		return fmt.Errorf("keep: commit at %d: log start %d, clean %d, cut %d", seq, c.LogStart, c.Clean, c.Cut)
	case c.First+c.Records != seq:
		return fmt.Errorf("keep: commit at %d: %d records from %d, not whole", seq, c.Records, c.First)
	}
	for i, m := range c.Marks {
		if m.Seq < c.First || m.Seq >= seq || i > 0 && (m.Seq <= c.Marks[i-1].Seq || m.Offset <= c.Marks[i-1].Offset) {
			return fmt.Errorf("keep: commit at %d: mark %d at %d out of place", seq, m.Offset, m.Seq)
		}
	}
	end := int64(-1)
	for _, s := range c.Compacted {
		if s.End <= end || s.End > c.Clean {
			return fmt.Errorf("keep: commit at %d: compacted span ends at %d", seq, s.End)
		}
		end = s.End
	}
	return nil
}

// CompactedAt is when offset was first compacted, and whether it was.
func (c *Commit) CompactedAt(offset int64) (int64, bool) {
	if offset < c.LogStart || offset >= c.Clean {
		return 0, false
	}
	for _, s := range c.Compacted {
		if offset < s.End {
			return s.CompactedMs, true
		}
	}
	return 0, false
}

// StartSeq is the sequence number a reader of the generation starts at to find
// offset: the last mark at or before it, or the generation's first batch.
// The batches from there on are in offset order, so the reader reads on
// until it finds the one holding offset.
func (c *Commit) StartSeq(offset int64) int64 {
	i := sort.Search(len(c.Marks), func(i int) bool { return c.Marks[i].Offset > offset })
	if i == 0 {
		return c.First
	}
	return c.Marks[i-1].Seq
}

// MaxMarks bounds a commit's marks, so that a commit record stays well
// within one DIS record (about 40 bytes a mark).
const MaxMarks = 4096

// AddMark places a batch written at seq with base offset base, keeping at
// most MaxMarks: when they are full every other one goes, and from then on
// a batch is marked only past twice the spacing before.
func (c *Commit) AddMark(base, seq int64) {
	if n := len(c.Marks); n >= 2 {
		step := c.Marks[n-1].Seq - c.Marks[n-2].Seq
		if seq-c.Marks[n-1].Seq < step {
			return
		}
	}
	c.Marks = append(c.Marks, Mark{Offset: base, Seq: seq})
	if len(c.Marks) >= MaxMarks {
		kept := c.Marks[:0]
		for i := 0; i < len(c.Marks); i += 2 {
			kept = append(kept, c.Marks[i])
		}
		c.Marks = kept
	}
}
