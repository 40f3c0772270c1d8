package plog

import (
	"runtime"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/protocol"
)

// A partition writer keeps one PutRecords call in flight, which is what
// keeps Kafka's order over a DIS that does not order concurrent calls
// (docs/design.md §4). Against the embedded DIS served in process
// (disclient.PipelinedPutter) a call answers once its batches have their
// sequence numbers, and their durability (the record log's fsync) is
// waited for apart: the writer makes its next call at once while a
// completer waits, then publishes each call's batches to readers and
// answers its producers, in order. Without it each batch that arrives
// during an fsync waited for that fsync to end before being appended, and
// then for another (docs/design.md §10). The order in DIS is still the
// order of the calls, since a call is made only after the one before has
// its sequence numbers; what a reader sees and what a producer is told
// stays behind the fsync.

// pipelineDepth bounds the calls of one partition waiting for their
// durability at once.
const pipelineDepth = 4

// pipelinedCall is a call whose batches DIS has sequenced but not yet made
// durable. The completer publishes them and answers their ops once wait
// returns nil, or fails the ops with its error.
type pipelinedCall struct {
	ops     []*Append
	written []Batch
	cost    int64
	// released is set once cost is given back, so that a completer
	// that panicked after that does not give it back twice; only the
	// completer touches it.
	released bool
	wait     func() error
	// next and nextSeq are the partition's next offset and sequence
	// number after the call: where the writer's next call starts.
	next, nextSeq int64
	// done is closed once the call is completed and out of the pipeline.
	done chan struct{}
}

// frontier is where the writer's next call starts when calls are still
// waiting for their durability: after the newest of them. ok is false when
// none is, and the partition state's next offset is the frontier. Read it
// before the state: a call leaves the pipeline only after it is published.
func (w *partitionWriter) frontier() (next, nextSeq int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.pipeline); n > 0 {
		c := w.pipeline[n-1]
		return c.next, c.nextSeq, true
	}
	return 0, 0, false
}

// awaitPipeline waits until at most n calls wait for their durability.
// The completer takes them in order, so that is when the call n places
// behind the newest is completed. n is 0 before a call that did not go
// as planned is handled, which reads the partition state and may read DIS
// back; pipelineDepth-1 before a call is made.
func (w *partitionWriter) awaitPipeline(n int) {
	w.mu.Lock()
	var call *pipelinedCall
	if len(w.pipeline) > n {
		call = w.pipeline[len(w.pipeline)-1-n]
	}
	w.mu.Unlock()
	if call != nil {
		<-call.done
	}
}

// pipelineCall hands c to the completer, starting it if it is idle.
func (w *partitionWriter) pipelineCall(c *pipelinedCall) {
	c.done = make(chan struct{})
	w.mu.Lock()
	w.pipeline = append(w.pipeline, c)
	start := !w.completing
	w.completing = true
	w.mu.Unlock()
	if start {
		go w.completePipeline()
	}
}

// completePipeline completes the pipelined calls in order until none is
// left.
func (w *partitionWriter) completePipeline() {
	defer w.d.Recover("partition writer completer", w.abandonPipeline)
	for {
		w.mu.Lock()
		if len(w.pipeline) == 0 {
			w.completing = false
			w.mu.Unlock()
			return
		}
		c := w.pipeline[0]
		w.mu.Unlock()
		w.completeCall(c)
		w.mu.Lock()
		w.pipeline[0] = nil
		w.pipeline = w.pipeline[1:]
		w.mu.Unlock()
		close(c.done)
	}
}

// completeCall waits for c's durability, then publishes its batches and
// answers its producers, or fails them as a failed PutRecords fails them.
func (w *partitionWriter) completeCall(c *pipelinedCall) {
	ps := w.state
	// The other partitions of the produce request that brought these
	// batches were queued with them, and their writers are runnable:
	// letting them append first puts the whole request under the fsync
	// this wait may start. Without the yield a 1 KiB, 16 KiB franz-go
	// produce ran at 119 000-126 000 records/s, with it at 135 000-137 000
	// (docs/design.md §10).
	runtime.Gosched()
	if err := c.wait(); err != nil {
		w.failUndurable(c.ops, err)
	} else {
		ps.appended(c.written)
		ps.scheduleWatermark()
	}
	w.countProduced(c.ops)
	w.d.Queues.release(w, c.cost)
	c.released = true
	for _, op := range c.ops {
		op.finish()
	}
}

// failUndurable fails the written ops of a call whose records DIS
// sequenced but could not make durable (the embedded DIS's failed fsync,
// after which it takes no writes until restarted): they are not answered
// as written, and the partition's offsets are recovered again before its
// next write.
func (w *partitionWriter) failUndurable(ops []*Append, err error) {
	w.d.Log.Warn().Err(err).Str("topic", w.key.Topic).Int32("partition", w.key.Partition).
		Msg("PutRecords failed: DIS could not make the records durable")
	code := w.d.KafkaCode(err)
	for _, op := range ops {
		if op.ErrCode != 0 {
			continue
		}
		op.fail(code, err.Error())
		if op.ProducerID >= 0 {
			w.producerFailed(op)
		}
	}
	w.state.forget()
}

// abandonPipeline completes, after a panic in the completer, every call
// still in the pipeline: their ops fail with UNKNOWN_SERVER_ERROR (their
// records may be written), and the partition's offsets are recovered
// again before its next write.
func (w *partitionWriter) abandonPipeline() {
	w.mu.Lock()
	calls := w.pipeline
	w.pipeline, w.completing = nil, false
	w.mu.Unlock()
	for _, c := range calls {
		select {
		case <-c.done:
			continue
		default:
		}
		for _, op := range c.ops {
			select {
			case <-op.done:
			default:
				if op.ProducerID >= 0 {
					w.producerFailed(op)
				}
				op.fail(kerr.UnknownServerError.Code, "disgw failed writing this batch")
				op.finish()
			}
		}
		if !c.released {
			w.d.Queues.release(w, c.cost)
		}
		close(c.done)
	}
	w.state.forget()
}

// countProduced counts the records of the ops that were written.
func (w *partitionWriter) countProduced(ops []*Append) {
	for _, op := range ops {
		if op.ErrCode != 0 {
			continue
		}
		for j := range op.Entries {
			info, _ := protocol.ParseBatchInfo(op.Entries[j].Data)
			w.d.Produced(w.key, int(info.NumRecords), len(op.Entries[j].Data))
		}
	}
}
