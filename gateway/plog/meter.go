package plog

import (
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
)

// quotaWindow is how many whole seconds the DIS quota share is averaged
// over.
const quotaWindow = 10

// ioMeter counts a partition's DIS traffic per second over the last
// quotaWindow seconds, which is what DIS's per-partition limits apply to.
// The zero value is ready.
type ioMeter struct {
	mu    sync.Mutex
	slots [quotaWindow + 1]ioSlot
}

type ioSlot struct {
	sec                          int64
	recordsIn, bytesIn, bytesOut float64
}

// entriesBytes is the record data of PutRecords entries.
func entriesBytes(recs []disclient.PutRecordsEntry) int {
	n := 0
	for i := range recs {
		n += len(recs[i].Data)
	}
	return n
}

// wrote counts records DIS stored.
func (m *ioMeter) wrote(recs []disclient.PutRecordsEntry) {
	m.add(time.Now(), float64(len(recs)), float64(entriesBytes(recs)), 0)
}

// read counts records DIS returned.
func (m *ioMeter) read(recs []disclient.Record) {
	n := 0
	for i := range recs {
		n += len(recs[i].Data) + recs[i].Rest.Len
	}
	m.add(time.Now(), 0, 0, float64(n))
}

func (m *ioMeter) add(now time.Time, recordsIn, bytesIn, bytesOut float64) {
	sec := now.Unix()
	m.mu.Lock()
	s := &m.slots[sec%int64(len(m.slots))]
	if s.sec != sec {
		*s = ioSlot{sec: sec}
	}
	s.recordsIn += recordsIn
	s.bytesIn += bytesIn
	s.bytesOut += bytesOut
	m.mu.Unlock()
}

// rates are the per-second averages over the last quotaWindow whole
// seconds before now.
func (m *ioMeter) rates(now time.Time) (recordsIn, bytesIn, bytesOut float64) {
	cur := now.Unix()
	m.mu.Lock()
	for _, s := range m.slots {
		if s.sec < cur && s.sec >= cur-quotaWindow {
			recordsIn += s.recordsIn
			bytesIn += s.bytesIn
			bytesOut += s.bytesOut
		}
	}
	m.mu.Unlock()
	return recordsIn / quotaWindow, bytesIn / quotaWindow, bytesOut / quotaWindow
}

// Rates are the partition's DIS traffic per second, averaged over the last
// quotaWindow whole seconds before now: records and bytes written, bytes
// read. DIS's per-partition limits apply to these.
func (ps *Partition) Rates(now time.Time) (recordsIn, bytesIn, bytesOut float64) {
	return ps.meter.rates(now)
}
