// Package topics is what the gateway knows of topics: the catalog of
// streams (cached DescribeStream answers, topic ids and names), how Kafka
// topic names map onto DIS stream names (docs/design.md §2), the topic
// configs and the stream tags that keep them, the record formats with the
// raw format's header and key policies, and the budgets that bound the DIS
// calls one request may make. Handlers use the Catalog of their tenant and
// the functions here; what the package needs of the gateway comes in Deps,
// so that it never imports gateway. docs/design.md §11 has its lock.
package topics

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// Config holds the gateway settings topics read; the gateway's Config
// documents each.
type Config struct {
	DefaultRecordFormat    RecordFormat
	DefaultRetentionHours  int32
	MaxRecordBytes         int
	MetadataTTL            time.Duration
	UnknownTopicTTL        time.Duration
	MaxDescribesPerRequest int
}

// Deps is what the catalog of one tenant needs from the gateway: its
// settings, the tenant's DIS client and the gateway's helpers, and nothing
// of the gateway itself. Every field must be set.
type Deps struct {
	Config

	// DIS is the tenant's DIS client: streams are described, listed,
	// created and changed with the tenant's own credentials.
	DIS disclient.API
	Log zerolog.Logger
	// Parallel runs fn for i in [0, n), at most DescribeConcurrency at
	// once, and returns when all have.
	Parallel func(n int, fn func(i int))
	// KafkaCode maps a failed DIS call to the Kafka error code a config
	// change fails with (docs/errors.md).
	KafkaCode func(err error) int16
}
