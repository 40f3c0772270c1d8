package protocol

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchValueSizes are the value sizes the batch benchmarks run with: the
// small and the 1 KiB records of the throughput bench (test/bench's -sizes).
var benchValueSizes = []int{100, 1024}

// benchRecords returns 1 MiB of records, a batch of the bench's larger
// batch size, with values of size bytes that compress about as well as
// JSON logs do.
func benchRecords(size int) []Record {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"user", "order", "status", "shipped", "pending", "amount", "currency", "EUR", "id", "ts"}
	recs := make([]Record, 1<<20/size)
	for i := range recs {
		value := make([]byte, 0, size+16)
		for len(value) < size {
			value = fmt.Appendf(value, `"%s":%d,`, words[rng.IntN(len(words))], rng.IntN(100000))
		}
		recs[i] = Record{
			Offset:    int64(1000 + i),
			Timestamp: 1_700_000_000_000 + int64(i),
			Key:       fmt.Appendf(nil, "key-%d", i),
			Value:     value[:size],
		}
	}
	return recs
}

var benchCodecs = []Codec{CodecNone, CodecSnappy, CodecLZ4, CodecZstd}

func BenchmarkAppendBatch(b *testing.B) {
	for _, size := range benchValueSizes {
		recs := benchRecords(size)
		for _, codec := range benchCodecs {
			b.Run(fmt.Sprintf("value=%d/%s", size, codec), func(b *testing.B) {
				b.SetBytes(int64(len(recs) * size))
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					var err error
					if buf, err = AppendBatch(buf[:0], recs, codec, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDecodeBatches(b *testing.B) {
	benchmarkBatches(b, DecodeBatches)
}

// BenchmarkCheckBatches is BenchmarkDecodeBatches without keeping the
// records, as a kafka-format topic's produce checks them.
func BenchmarkCheckBatches(b *testing.B) {
	benchmarkBatches(b, CheckBatches)
}

func benchmarkBatches(b *testing.B, decode func([]byte, *DecompressBudget) ([]Batch, error)) {
	for _, size := range benchValueSizes {
		recs := benchRecords(size)
		for _, codec := range benchCodecs {
			b.Run(fmt.Sprintf("value=%d/%s", size, codec), func(b *testing.B) {
				data, err := AppendBatch(nil, recs, codec, 0)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(recs) * size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := decode(data, NewDecompressBudget(4<<20)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
