package keep

// Chain decides which generation of a keep partition is current, from its
// commit records read in sequence order. A commit is current when it names
// the current commit before it (or, when none was seen, a commit DIS has
// expired or none at all) and follows its generation number. DIS orders a
// partition's records, so every gateway that reads them decides the same,
// and a commit built on a generation that another commit replaced first is
// never current: two rewriters racing through an ownership move cannot both
// make theirs current (docs/design.md §12).
type Chain struct {
	cur    *Commit
	curSeq int64
	// floor is the partition's earliest sequence number when the reading
	// began: a commit naming one below it names a commit DIS expired.
	floor int64
}

// NewChain starts a chain over a partition whose earliest sequence number
// is earliestSeq, with no commit known.
func NewChain(earliestSeq int64) *Chain { return &Chain{curSeq: -1, floor: earliestSeq} }

// Start makes c, at seq, the current commit: one a reader knows is current
// (the checkpoint that points at it), from which it reads on.
func (ch *Chain) Start(c *Commit, seq int64) { ch.cur, ch.curSeq = c, seq }

// Add takes the commit record c at seq, read after every record before it,
// and reports whether it is now the current commit.
func (ch *Chain) Add(c *Commit, seq int64) bool {
	if seq <= ch.curSeq {
		return false
	}
	var ok bool
	if ch.cur == nil {
		ok = c.Prev < ch.floor
	} else {
		ok = c.Prev == ch.curSeq && c.Gen == ch.cur.Gen+1
	}
	if ok {
		ch.cur, ch.curSeq = c, seq
	}
	return ok
}

// Current is the current commit and its sequence number, or nil and -1.
func (ch *Chain) Current() (*Commit, int64) { return ch.cur, ch.curSeq }
