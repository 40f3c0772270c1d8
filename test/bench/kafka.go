package main

import "github.com/disgw/disgw/test"

// kafkaFlushProperties is the server.properties line that makes Kafka's
// durability comparable to disgw's fsync=always, or none for Kafka's
// default (the OS flushes the page cache when it likes; replication, not
// fsync, is what makes Kafka durable).
func kafkaFlushProperties(flush string) string {
	if flush == "always" {
		return "log.flush.interval.messages=1\n"
	}
	return ""
}

// kafkaDescription says how the broker was configured, for the settings
// line, so a reader sees what durability the ratios compare.
func kafkaDescription(flush string) string {
	if flush == "always" {
		return "kafka=" + test.KafkaVersion + " kafka-flush=always(log.flush.interval.messages=1:fsync-per-append)"
	}
	return "kafka=" + test.KafkaVersion + " kafka-flush=default(no-fsync-per-write:page-cache)"
}
