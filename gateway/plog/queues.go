package plog

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Queues bounds the records waiting in partition writers, per
// partition and over all partitions (the gateway's MaxPartitionQueueBytes
// and MaxQueueBytes), counting an op from when it is queued until its
// PutRecords call has finished. A produce that finds no room waits in its
// connection's ordered stage, so the connection is not read meanwhile: the
// backpressure a Kafka broker applies by not reading a socket, and the only
// thing that holds back an acks=0 producer, which is never answered. An op
// is admitted alone into an empty queue whatever its size, so one large
// batch cannot wait forever.
type Queues struct {
	perPartition, total int64

	mu     sync.Mutex
	queued int64
	space  chan struct{} // closed and replaced whenever room is released
	gauge  prometheus.Gauge
	waits  prometheus.Counter
}

// NewQueues makes the write-queue bounds: perPartition and total bytes,
// with the gauge of the bytes queued and the counter of produces that
// waited for room.
func NewQueues(perPartition, total int64, gauge prometheus.Gauge, waits prometheus.Counter) *Queues {
	return &Queues{perPartition: perPartition, total: total, space: make(chan struct{}), gauge: gauge, waits: waits}
}

// reserve takes cost bytes of room in w's queue and the overall one,
// waiting for it until ctx is done; it reports whether it got the room.
func (q *Queues) reserve(ctx context.Context, w *partitionWriter, cost int64) bool {
	waited := false
	for {
		q.mu.Lock()
		fits := (w.queued == 0 || w.queued+cost <= q.perPartition) && (q.queued == 0 || q.queued+cost <= q.total)
		if fits {
			w.queued += cost
			q.queued += cost
			q.gauge.Set(float64(q.queued))
			q.mu.Unlock()
			return true
		}
		space := q.space
		q.mu.Unlock()
		if !waited {
			waited = true
			q.waits.Inc()
		}
		select {
		case <-space:
		case <-ctx.Done():
			return false
		}
	}
}

// release gives back room reserve took and wakes the produces waiting.
func (q *Queues) release(w *partitionWriter, cost int64) {
	q.mu.Lock()
	w.queued -= cost
	q.queued -= cost
	q.gauge.Set(float64(q.queued))
	close(q.space)
	q.space = make(chan struct{})
	q.mu.Unlock()
}
