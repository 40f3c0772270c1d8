package disgw;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives disgw with the unmodified Java Kafka client: AdminClient creates a
 * topic and reads the cluster, the default (idempotent, acks=all) producer
 * writes records with keys and headers, and a consumer group member reads
 * them back and commits. Any mismatch exits non-zero with a message.
 */
public final class Compat {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = "java-compat";
        int n = 1000;

        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            int brokers = admin.describeCluster().nodes().get().size();
            check(brokers == 1, "describeCluster: " + brokers + " brokers");
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            check(partitions == 3, "describeTopics: " + partitions + " partitions");
        }

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            check(producer.metrics().keySet().stream().anyMatch(m -> m.name().equals("record-send-total")), "producer metrics");
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ProducerRecord<String, String> rec = new ProducerRecord<>(topic, "key-" + i, "value-" + i);
                rec.headers().add("i", Integer.toString(i).getBytes());
                sent.add(producer.send(rec));
            }
            for (Future<RecordMetadata> f : sent) {
                f.get();
            }
        }

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "java-group");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    String i = new String(r.headers().lastHeader("i").value());
                    check(r.key().equals("key-" + i) && r.value().equals("value-" + i), "record " + r.offset() + ": " + r.key() + "=" + r.value());
                    check(seen.add(r.value()), "duplicate " + r.value());
                }
                consumer.commitSync();
            }
            check(seen.size() == n, "consumed " + seen.size() + " of " + n);
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(
                Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2)));
            long total = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            check(total == n, "committed offsets add up to " + total);
        }

        try (Admin admin = Admin.create(ap)) {
            boolean listed = false;
            for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
                listed |= g.groupId().equals("java-group");
            }
            check(listed, "listConsumerGroups lacks java-group");
            String state = admin.describeConsumerGroups(List.of("java-group")).all().get().get("java-group").groupState().toString();
            check(state.equalsIgnoreCase("Empty"), "group state " + state);
        }
        System.out.println("java compat ok: " + n + " records");
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("java compat failed: " + what);
            System.exit(1);
        }
    }
}
