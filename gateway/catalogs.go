package gateway

import (
	"sync"

	"github.com/disgw/disgw/gateway/topics"
)

// topicsConfig is the part of the gateway's settings the topic catalog and
// the topic configs read.
func (cfg *Config) topicsConfig() topics.Config {
	return topics.Config{
		DefaultRecordFormat:    cfg.DefaultRecordFormat,
		DefaultRetentionHours:  cfg.DefaultRetentionHours,
		MaxRecordBytes:         cfg.MaxRecordBytes,
		MetadataTTL:            cfg.MetadataTTL,
		UnknownTopicTTL:        cfg.UnknownTopicTTL,
		MaxDescribesPerRequest: cfg.MaxDescribesPerRequest,
	}
}

// topicsDeps is what tn's topic catalog gets of the gateway: settings,
// tn's DIS client, and the helpers for parallel DIS calls and error codes.
func (gw *Gateway) topicsDeps(tn *tenant) topics.Deps {
	return topics.Deps{
		Config:    gw.topicCfg,
		DIS:       tn.dis,
		Log:       gw.log,
		Parallel:  gw.parallel,
		KafkaCode: kafkaCodeForDIS,
	}
}

// parallel runs fn for i in [0, n) with at most topics.DescribeConcurrency at once.
func (gw *Gateway) parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, topics.DescribeConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		gw.panics.Go("parallel DIS calls", func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		})
	}
	wg.Wait()
}
