package disgw.apps;

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The word count of Kafka Streams' examples, for test/apps_streams_test.go:
 * lines from an input topic are split into words, re-keyed by word (the
 * repartition topic {@code <application.id>-words-repartition}), counted in
 * the state store {@code counts} (changelog {@code <application.id>-counts-changelog})
 * and every new count is written to the output topic as word → count.
 *
 * <p>Usage: {@code WordCount bootstrap application.id state.dir input output [key=value ...]};
 * the key=value pairs are further Streams configs. The test reads the log lines
 * holding "WORDCOUNT": RUNNING once the instance processes, RESTORED for
 * each store partition restored from its changelog, ERROR and an exit code of 1
 * when Streams fails.
 */
public final class WordCount {
    // Logged as Kafka logs (slf4j-simple, to stderr), so that a line is
    // written whole, never interleaved with Kafka's own.
    private static final Logger LOG = LoggerFactory.getLogger(WordCount.class);

    public static void main(String[] args) throws InterruptedException {
        if (args.length < 5) {
            System.err.println("usage: WordCount bootstrap application.id state.dir input output [key=value ...]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        for (String kv : Arrays.copyOfRange(args, 5, args.length)) {
            int eq = kv.indexOf('=');
            props.put(kv.substring(0, eq), kv.substring(eq + 1));
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .map((word, count) -> KeyValue.pair(word, count.toString()))
            .to(args[4], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            LOG.info("WORDCOUNT state {} -> {}", before, now);
            if (now == KafkaStreams.State.RUNNING) {
                LOG.info("WORDCOUNT RUNNING");
            }
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            LOG.error("WORDCOUNT ERROR", e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new RestoreLog());
        streams.start();
        // Only the test ends the application, by killing it; Streams stopping
        // on its own is a failure the test sees as the process exiting.
        stopped.await();
        streams.close();
        System.exit(1);
    }

    /** RestoreLog logs each store partition's restoration from its changelog. */
    private static final class RestoreLog implements StateRestoreListener {
        private final AtomicLong total = new AtomicLong();

        @Override
        public void onRestoreStart(TopicPartition changelog, String store, long start, long end) {
            LOG.info("WORDCOUNT RESTORING {} from {} offsets {} to {}", store, changelog, start, end);
        }

        @Override
        public void onBatchRestored(TopicPartition changelog, String store, long batchEnd, long restored) {
        }

        @Override
        public void onRestoreEnd(TopicPartition changelog, String store, long restored) {
            LOG.info("WORDCOUNT RESTORED {} from {}: {} records, {} in all", store, changelog, restored, total.addAndGet(restored));
        }
    }
}
