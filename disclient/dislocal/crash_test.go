package dislocal

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// TestCrashHistories runs seeded random histories of PutRecords against a
// server whose pebble and record log live on file systems that a crash
// cuts back to what was synced plus a random part of the rest
// (vfs.NewCrashableMem, logfs.MemFS), crashes and reopens it, and checks
// after each reopen that every acknowledged record is read at its sequence
// number with its data, that a sequence number once served keeps its data
// (none reused), and that a record served was written by some PutRecords
// (an unacknowledged one only when it was durable: it then stays).
func TestCrashHistories(t *testing.T) {
	histories := 24
	if testing.Short() {
		histories = 4
	}
	deadline := time.Now().Add(15 * time.Second)
	for h := range histories {
		if time.Now().After(deadline) {
			t.Logf("stopped after %d histories, at the time bound", h)
			return
		}
		t.Run(fmt.Sprint("seed=", h), func(t *testing.T) { crashHistory(t, uint64(h)) })
	}
}

func crashHistory(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 35))
	pfs, lfs := vfs.NewCrashableMem(), logfs.NewMemFS()
	e := &env{tb: t, dir: "/data", clock: newFakeClock(), sync: SyncAlways, segmentBytes: 8 << 10, logFS: lfs, pebbleFS: pfs}
	e.open()
	defer func() { e.close() }()
	const parts = 3
	e.createStream("s", parts)
	// served[p][seq] is the data every read must find at seq once it was
	// acknowledged or served; written holds all data ever sent.
	served := [parts]map[int64]string{}
	for p := range served {
		served[p] = make(map[int64]string)
	}
	written := make(map[string]bool)
	n := 0
	for crash := range 4 {
		for range 5 + rng.IntN(20) {
			var recs []disclient.PutRecordsEntry
			for range 1 + rng.IntN(6) {
				n++
				v := fmt.Sprintf("r%d-%s", n, strings.Repeat("x", rng.IntN(1500)))
				written[v] = true
				r := disclient.PutRecordsEntry{Data: []byte(v), PartitionID: disclient.PartitionID(int32(rng.IntN(parts)))}
				if rng.IntN(3) == 0 {
					r.PartitionKey = fmt.Sprint("k", n)
				}
				recs = append(recs, r)
			}
			var resp disclient.PutRecordsResponse
			e.must("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s", Records: recs}, 200, &resp)
			for i, r := range resp.Records {
				var p int32
				if _, err := fmt.Sscanf(r.PartitionID, "shardId-%d", &p); err != nil {
					t.Fatal(err)
				}
				var seq int64
				fmt.Sscan(r.SequenceNumber, &seq)
				if old, ok := served[p][seq]; ok && old != string(recs[i].Data) {
					t.Fatalf("crash %d: partition %d sequence number %d given to new data, held %.10q", crash, p, seq, old)
				}
				served[p][seq] = string(recs[i].Data)
			}
		}
		// The crash: both file systems as a power loss leaves them. The
		// old server goes on, on the old ones, and is closed.
		pc := pfs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(rng.Uint64(), 1))})
		lc := lfs.Crash(rand.New(rand.NewPCG(rng.Uint64(), 2)))
		e.close()
		pfs, lfs = pc, lc
		e.pebbleFS, e.logFS = pfs, lfs
		e.open()
		for p := range int32(parts) {
			d := e.describe("s", "").Partitions[p].SequenceNumberRange
			var lo, hi int64
			fmt.Sscanf(d, "[%d : %d]", &lo, &hi)
			for seq, want := range served[p] {
				if seq >= hi {
					t.Fatalf("crash %d: partition %d ends at %d, record %d (%.10q) lost", crash, p, hi, seq, want)
				}
			}
			for seq := lo; seq < hi; seq++ {
				data, status, body := e.readSeq("s", p, seq)
				want, known := served[p][seq]
				switch {
				case status != 200 && known:
					t.Fatalf("crash %d: partition %d record %d unreadable: %d %s", crash, p, seq, status, body)
				case status != 200:
					// An unacknowledged record in damage: quarantined.
				case known && data != want:
					t.Fatalf("crash %d: partition %d record %d is %.10q, was %.10q", crash, p, seq, data, want)
				case !written[data]:
					t.Fatalf("crash %d: partition %d record %d holds data never written", crash, p, seq)
				default:
					served[p][seq] = data
				}
			}
		}
	}
}
