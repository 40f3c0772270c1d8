package dislocal

import (
	"fmt"
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
)

// QuotaMode says whether the server enforces DIS's per-partition traffic
// limits and which stream type a stream created without one gets.
type QuotaMode string

const (
	// QuotasNone enforces no traffic limit (the default). Streams created
	// without a stream_type are COMMON.
	QuotasNone QuotaMode = "none"
	// QuotasCommon limits every partition as its stream's stream_type says;
	// streams created without one are COMMON, as on DIS.
	QuotasCommon QuotaMode = "common"
	// QuotasAdvanced limits every partition as its stream's stream_type
	// says; streams created without one are ADVANCED.
	QuotasAdvanced QuotaMode = "advanced"
)

// ParseQuotaMode checks a --embedded-dis-quotas value; "" is QuotasNone.
func ParseQuotaMode(s string) (QuotaMode, error) {
	switch m := QuotaMode(s); m {
	case "":
		return QuotasNone, nil
	case QuotasNone, QuotasCommon, QuotasAdvanced:
		return m, nil
	default:
		return "", fmt.Errorf("dislocal: unknown quota mode %q (want %q, %q or %q)", s, QuotasNone, QuotasCommon, QuotasAdvanced)
	}
}

// defaultStreamType is the stream_type of a stream created without one.
func (m QuotaMode) defaultStreamType() string {
	if m == QuotasAdvanced {
		return disclient.StreamTypeAdvanced
	}
	return disclient.StreamTypeCommon
}

// quotaLimits are the per-partition rates DIS documents for a stream type
// (docs/dis-api.md §2, "Throughput per partition"): records and bytes of
// record data written per second, and bytes of record data read per second.
// DIS's "MB" is taken as 2^20 bytes, as for its record size limit.
type quotaLimits struct {
	recordsIn, bytesIn, bytesOut float64
}

var (
	commonLimits   = quotaLimits{recordsIn: 1000, bytesIn: 1 << 20, bytesOut: 2 << 20}
	advancedLimits = quotaLimits{recordsIn: 2000, bytesIn: 5 << 20, bytesOut: 10 << 20}
)

// limitsFor returns the limits of a stream type.
func limitsFor(streamType string) *quotaLimits {
	if streamType == disclient.StreamTypeAdvanced {
		return &advancedLimits
	}
	return &commonLimits
}

// bucket is a token bucket holding at most one second of its rate, the
// burst DIS allows. It starts full.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill adds what rate earned since the last refill, up to one second's
// worth. A clock that steps back earns nothing.
func (b *bucket) refill(now time.Time, rate float64) {
	if b.last.IsZero() {
		b.tokens, b.last = rate, now
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(rate, b.tokens+rate*d.Seconds())
		b.last = now
	}
}

// partitionQuota is the traffic state of one partition. It has its own
// lock so that throttling decisions never wait on the partition's storage.
type partitionQuota struct {
	mu        sync.Mutex
	recordsIn bucket
	bytesIn   bucket
	bytesOut  bucket
}

// admitWrite takes one record of size bytes from the write buckets, or
// takes nothing and reports false when either lacks the tokens. A record
// larger than a whole bucket is admitted into a full bucket (leaving it in
// debt), so that no record is refused forever.
func (q *partitionQuota) admitWrite(now time.Time, l *quotaLimits, size int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recordsIn.refill(now, l.recordsIn)
	q.bytesIn.refill(now, l.bytesIn)
	need := float64(size)
	if q.recordsIn.tokens < 1 || (q.bytesIn.tokens < need && q.bytesIn.tokens < l.bytesIn) {
		return false
	}
	q.recordsIn.tokens--
	q.bytesIn.tokens -= need
	return true
}

// admitRead reports whether the partition may be read now: the out bucket
// holds tokens. The bytes read are charged afterwards by chargeRead, since
// an answer's size is known only once it is built; one answer may leave
// the bucket in debt, which later reads wait out.
func (q *partitionQuota) admitRead(now time.Time, l *quotaLimits) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bytesOut.refill(now, l.bytesOut)
	return q.bytesOut.tokens > 0
}

// chargeRead takes the bytes of an answer from the out bucket.
func (q *partitionQuota) chargeRead(n int) {
	q.mu.Lock()
	q.bytesOut.tokens -= float64(n)
	q.mu.Unlock()
}

// quotaEnforced reports whether the server limits traffic.
func (s *Server) quotaEnforced() bool {
	return s.cfg.Quotas != QuotasNone
}

// throttleResult is the per-record answer for a record refused by traffic
// control: DIS.4303 with no partition_id, as DIS fails records.
func throttleResult(p *partition) disclient.PutRecordsResult {
	return disclient.PutRecordsResult{
		ErrorCode:    disclient.CodeTrafficControl,
		ErrorMessage: "Traffic control limit exceeded. [" + p.id + "]",
	}
}

// errReadThrottled is the answer to a GetRecords over the partition's read
// quota: the whole request refused with DIS.4303 (HTTP 400).
func errReadThrottled(p *partition) *apiError {
	return errorf(disclient.CodeTrafficControl, "Traffic control limit exceeded. [%s] read quota", p.id)
}

// throttleWrites fails, per record, the routed records (targets[i] >= 0)
// over their partition's write quota and sets their targets to -1. Once a
// record of a partition is refused, every later record of that partition in
// the same request is refused too, so a partition never stores a later
// record of a request without the earlier ones: a writer that resends the
// refused records keeps its order. It returns how many it refused.
func (s *Server) throttleWrites(st *stream, recs []disclient.PutRecordsEntry, targets []int32, results []disclient.PutRecordsResult) int32 {
	now := s.cfg.Now()
	l := limitsFor(st.meta.StreamType)
	var refused map[int32]bool
	var count int32
	for i := range recs {
		n := targets[i]
		if n < 0 {
			continue
		}
		p := st.parts[n]
		if !refused[n] && p.quota.admitWrite(now, l, len(recs[i].Data)) {
			continue
		}
		if refused == nil {
			refused = make(map[int32]bool)
		}
		refused[n] = true
		targets[i] = -1
		results[i] = throttleResult(p)
		count++
	}
	return count
}
