package plog

import (
	"container/list"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Cache bounds what all partitions cache, kafka-format batches and
// raw-format records, with one gateway-wide byte budget
// (Config.ReadCacheBytes): past it, the partitions read least recently give
// up their oldest first.
type Cache struct {
	budget int64
	gauge  prometheus.Gauge

	// mu guards used, lru and elems. No other lock is taken while it is
	// held: trimming a partition releases it first.
	mu    sync.Mutex
	used  int64
	lru   list.List // of *Partition, most recently used first
	elems map[*Partition]*list.Element
}

// NewCache makes the read cache of budget bytes, with the gauge of the bytes
// it holds.
func NewCache(budget int, gauge prometheus.Gauge) *Cache {
	return &Cache{budget: int64(budget), gauge: gauge, elems: make(map[*Partition]*list.Element)}
}

// charge records that ps's window changed by delta bytes and marks it
// used, then trims windows until the cache is within its budget. It must
// be called without any partition's mu or reader's mu held: trimming takes
// them, with c.mu released (docs/design.md §11).
func (c *Cache) charge(ps *Partition, delta int) {
	c.mu.Lock()
	c.used += int64(delta)
	if e := c.elems[ps]; e != nil {
		c.lru.MoveToFront(e)
	} else if delta > 0 {
		c.elems[ps] = c.lru.PushFront(ps)
	}
	for c.used > c.budget && c.lru.Len() > 0 {
		victim := c.lru.Back().Value.(*Partition)
		over := c.used - c.budget
		c.mu.Unlock()
		freed := victim.trim(int(over))
		c.mu.Lock()
		c.used -= int64(freed)
		if int64(freed) < over {
			if e := c.elems[victim]; e != nil {
				c.lru.Remove(e)
				delete(c.elems, victim)
			}
		}
	}
	c.gauge.Set(float64(c.used))
	c.mu.Unlock()
}

// forget drops an evicted partition, whose bytes it already released.
func (c *Cache) forget(ps *Partition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.elems[ps]; e != nil {
		c.lru.Remove(e)
		delete(c.elems, ps)
	}
}
