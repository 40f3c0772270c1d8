package disgw;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives disgw's transactions with the unmodified Java client: a
 * transactional producer commits and aborts transactions, one of them with
 * a consumer group's offsets (sendOffsetsToTransaction); a read_committed
 * consumer reads exactly the committed records and the group's offset; a
 * second producer with the same transactional id fences the first. Any
 * mismatch exits non-zero with a message.
 */
public final class Transactions {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = "java-txn";
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1), new NewTopic("java-txn-source", 1, (short) 1))).all().get();
        }

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-txn-1");
        TopicPartition offsetsOf = new TopicPartition("java-txn-source", 0);
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        producer.initTransactions();
        producer.beginTransaction();
        for (int i = 0; i < 10; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "committed-" + i));
        }
        producer.commitTransaction();
        producer.beginTransaction();
        for (int i = 0; i < 10; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "aborted-" + i));
        }
        producer.flush();
        producer.abortTransaction();
        producer.beginTransaction();
        for (int i = 0; i < 4; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "with-offsets-" + i));
        }
        try (KafkaConsumer<String, String> member = new KafkaConsumer<>(consumerProps(bootstrap, "java-txn-group"))) {
            producer.sendOffsetsToTransaction(Map.of(offsetsOf, new OffsetAndMetadata(42)), member.groupMetadata());
        }
        producer.commitTransaction();

        // A second producer of the same id fences the first.
        try (KafkaProducer<String, String> fresh = new KafkaProducer<>(pp)) {
            fresh.initTransactions();
            boolean fenced = false;
            try {
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, 0, "z", "zombie")).get();
                producer.commitTransaction();
            } catch (Exception e) {
                fenced = e instanceof ProducerFencedException || e.getCause() instanceof ProducerFencedException
                    || String.valueOf(e.getMessage()).contains("fenced") || String.valueOf(e.getMessage()).contains("epoch");
            }
            check(fenced, "the fenced producer could still commit");
        }
        producer.close(Duration.ofSeconds(5));

        Properties cp = consumerProps(bootstrap, "java-txn-reader");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            long quietUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    got.add(r.value());
                }
                if (got.size() >= 14 && quietUntil == Long.MAX_VALUE) {
                    quietUntil = System.currentTimeMillis() + 1000;
                }
            }
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(java.util.Set.of(offsetsOf));
            OffsetAndMetadata om = committed.get(offsetsOf);
            check(om == null, "the reader's own group has an offset for " + offsetsOf);
        }
        check(got.size() == 14, "read_committed read " + got.size() + " records, want 14: " + got);
        for (String v : got) {
            check(v.startsWith("committed-") || v.startsWith("with-offsets-"), "read_committed read " + v);
        }
        try (KafkaConsumer<String, String> group = new KafkaConsumer<>(consumerProps(bootstrap, "java-txn-group"))) {
            OffsetAndMetadata om = group.committed(java.util.Set.of(offsetsOf)).get(offsetsOf);
            check(om != null && om.offset() == 42, "the transaction's group offset: " + om);
        }
        System.out.println("java transactions ok");
    }

    private static Properties consumerProps(String bootstrap, String group) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return cp;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("FAIL: " + what);
            System.exit(1);
        }
    }
}
