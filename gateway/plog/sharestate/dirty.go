package sharestate

import (
	"slices"
	"sort"
)

// rangeSet is a set of offsets as sorted, disjoint, non-adjacent ranges:
// the offsets changed since the last record, so an update carries only
// those and stays small however large the in-flight state is.
type rangeSet []Range

// add puts [first, last] in the set, merging what it touches.
func (s *rangeSet) add(first, last int64) {
	r := *s
	// i: the first range that ends at or after first-1 (may merge).
	i := sort.Search(len(r), func(k int) bool { return r[k].Last >= first-1 })
	j := i
	for j < len(r) && r[j].First <= last+1 {
		first, last = min(first, r[j].First), max(last, r[j].Last)
		j++
	}
	*s = slices.Replace(r, i, j, Range{first, last})
}

// dropBelow forgets the offsets below off.
func (s *rangeSet) dropBelow(off int64) {
	r := *s
	k := sort.Search(len(r), func(k int) bool { return r[k].Last >= off })
	r = r[k:]
	if len(r) > 0 && r[0].First < off {
		r[0].First = off
	}
	*s = r
}

// touch notes that what is persisted of [first, last] changed.
func (p *Partition) touch(first, last int64) {
	p.dirty.add(first, last)
	p.changed = true
}
