package groups

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// offsetQueueKey names one group's offset write queue: groups belong to a
// tenant, and each tenant's offsets are its own DIS app.
type offsetQueueKey[T comparable] struct {
	tn    T
	group string
}

// Commit checks an OffsetCommit with the coordinator and, when it is
// accepted, queues write behind every earlier accepted commit of the group,
// so commits land in DIS in the order they were accepted. write is told
// stale when the commit came from a member and the group has since moved to
// a newer generation (or was forgotten and made again): it must then not
// land, so an older generation never overwrites a newer one. Returns the
// coordinator's code, NOT_COORDINATOR for a group another gateway
// coordinates; write runs only when it is 0.
func (d *Driver[T]) Commit(tn T, group, memberID string, instanceID *string, generation int32, write func(stale bool)) int16 {
	d.mu.Lock()
	if !d.deps.Coordinates(group) {
		d.mu.Unlock()
		return kerr.NotCoordinator.Code
	}
	c := d.coordLocked(tn)
	code := c.CheckCommit(time.Now(), group, memberID, instanceID, generation)
	if code == 0 {
		var fence uint64
		if generation >= 0 || memberID != "" || instanceID != nil {
			fence = c.CommitFence(group)
		}
		id, _ := d.deps.Tenant(tn)
		d.committers[groupKey{id, group}] = tn
		d.enqueueLocked(offsetQueueKey[T]{tn, group}, func() {
			write(fence != 0 && d.fence(tn, group) != fence)
		})
	}
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
	return code
}

// fence is the current commit fence of tn's group; 0 once the group is
// gone.
func (d *Driver[T]) fence(tn T, group string) uint64 {
	id, _ := d.deps.Tenant(tn)
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.coords[id]
	if c == nil {
		return 0
	}
	return c.CommitFence(group)
}

// enqueueLocked appends job to the group's queue and starts its worker when
// none runs.
func (d *Driver[T]) enqueueLocked(k offsetQueueKey[T], job func()) {
	q, running := d.queues[k]
	d.queues[k] = append(q, job)
	if !running {
		d.deps.Go("offset commit queue", func() { d.drain(k) })
	}
}

// drain runs a group's queued jobs one at a time until the queue is empty.
func (d *Driver[T]) drain(k offsetQueueKey[T]) {
	for {
		d.mu.Lock()
		q := d.queues[k]
		if len(q) == 0 {
			delete(d.queues, k)
			d.mu.Unlock()
			return
		}
		job := q[0]
		q[0] = nil
		d.queues[k] = q[1:]
		d.mu.Unlock()
		d.run(job)
	}
}

// run runs one queued job; a panic in it is logged and counted, and the
// queue goes on with the next.
func (d *Driver[T]) run(job func()) {
	defer d.deps.Recover("offset commit queue job", nil)
	job()
}
