package dislocal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient"
)

// A power loss can take pebble's record writes, which are not fsynced,
// while the record log, fsynced before every acknowledgement, keeps their
// frames. Opened from what was durable (pebble as of an earlier point, the
// log as written), the store has every acknowledged record at its
// sequence number, with its timestamp index, and goes on after them.
func TestReindexAfterLostPebbleWrites(t *testing.T) {
	e := newEnv(t)
	e.reopen()
	e.createStream("s", 2)
	e.createStream("gone", 1)
	e.putTo("s", 0, "a", "b")
	e.putTo("s", 1, "x")
	e.putTo("gone", 0, "g")

	// pebble as the disk holds it after the power loss.
	durable := filepath.Join(t.TempDir(), "durable")
	if err := e.srv.db.Checkpoint(durable, pebble.WithFlushedWAL()); err != nil {
		t.Fatal(err)
	}
	ts := e.clock.Now().UnixMilli() + 60_000
	e.put("s",
		disclient.PutRecordsEntry{Data: []byte("c"), PartitionID: disclient.PartitionID(0), Timestamp: &ts},
		disclient.PutRecordsEntry{Data: []byte("y"), PartitionID: disclient.PartitionID(1)},
	)
	later := ts + 5000
	e.put("s", disclient.PutRecordsEntry{Data: []byte("d"), PartitionID: disclient.PartitionID(0), Timestamp: &later})
	e.putTo("gone", 0, "h")
	e.close()

	// The log as written; pebble as it was at the checkpoint.
	if err := os.CopyFS(filepath.Join(durable, logDirName), os.DirFS(filepath.Join(e.dir, logDirName))); err != nil {
		t.Fatal(err)
	}
	e.dir = durable
	e.open()
	for part, want := range map[int32][]string{0: {"a", "b", "c", "d"}, 1: {"x", "y"}} {
		if got := payloads(e.readAll("s", part)); !slices.Equal(got, want) {
			t.Errorf("partition %d after the power loss: %v, want %v", part, got, want)
		}
	}
	// The timestamp index knows the records indexed again.
	c := e.cursor("s", "0", disclient.CursorAtTimestamp, "timestamp", strconv.FormatInt(later, 10))
	if recs := e.get(c).Records; len(recs) == 0 || string(recs[0].Data) != "d" {
		t.Errorf("AT_TIMESTAMP %d found %v, want d first", later, payloads(recs))
	}
	if got := e.putTo("s", 0, "e"); got[0] != "4" {
		t.Errorf("next sequence number %s, want 4", got[0])
	}
	// Indexed durably: a second open finds the same, with nothing to do.
	e.reopen()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("after reopening: %v", got)
	}
}

// A directory of format 2 (pebble fsynced with every record write, no log
// position) opens as it is and is marked with the current format.
func TestFormatTwoUpgrades(t *testing.T) {
	e := newEnv(t)
	e.reopen()
	e.createStream("s", 1)
	e.putTo("s", 0, "a")
	if err := e.srv.db.Set(formatKey, binary.BigEndian.AppendUint64(nil, 2), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.db.Delete(logPositionKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after the upgrade: %v", got)
	}
	v, closer, err := e.srv.db.Get(formatKey)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if got := binary.BigEndian.Uint64(v); got != dataFormat {
		t.Errorf("format %d after opening, want %d", got, dataFormat)
	}
}

// When pebble kept none of the record writes since the stream was made (a
// kill before its WAL writer wrote anything out), there is no log position
// at all: the whole log is indexed again.
func TestReindexWhenPebbleKeptNoWrite(t *testing.T) {
	e := newEnv(t)
	e.reopen()
	e.createStream("s", 1)
	durable := filepath.Join(t.TempDir(), "durable")
	if err := e.srv.db.Checkpoint(durable, pebble.WithFlushedWAL()); err != nil {
		t.Fatal(err)
	}
	e.putTo("s", 0, "a", "b")
	e.putTo("s", 0, "c")
	e.close()
	if err := os.CopyFS(filepath.Join(durable, logDirName), os.DirFS(filepath.Join(e.dir, logDirName))); err != nil {
		t.Fatal(err)
	}
	e.dir = durable
	e.open()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("after losing every record write of pebble: %v, want a b c", got)
	}
}
