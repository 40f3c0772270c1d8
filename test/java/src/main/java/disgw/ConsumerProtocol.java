package disgw;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives disgw's KIP-848 consumer groups with the Java client: a classic
 * consumer commits offsets, then members with group.protocol=consumer take
 * over the group, resuming at those commits; two members share the topic, a
 * third joins and one leaves, and every record is consumed exactly once.
 */
public final class ConsumerProtocol {
    private static final String TOPIC = "java-cp";
    private static final String GROUP = "java-cp-group";

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 6, (short) 1))).all().get();
        }
        produce(bootstrap, 0, 600);

        Map<String, String> seen = new ConcurrentHashMap<>();
        AtomicReference<String> failure = new AtomicReference<>();
        try (KafkaConsumer<String, String> classic = new KafkaConsumer<>(consumerProps(bootstrap, "classic"))) {
            classic.subscribe(List.of(TOPIC));
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen.size() < 600 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : classic.poll(Duration.ofMillis(200))) {
                    record(seen, failure, "classic", r.value());
                }
                classic.commitSync();
            }
        }
        check(failure.get() == null, String.valueOf(failure.get()));
        check(seen.size() == 600, "classic consumer read " + seen.size() + " of 600");

        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            members.add(new Member(bootstrap, "m" + i, seen, failure));
        }
        produce(bootstrap, 600, 1200);
        waitFor(seen, 1200, failure);
        Member third = new Member(bootstrap, "m2", seen, failure);
        members.add(third);
        produce(bootstrap, 1200, 1800);
        waitFor(seen, 1800, failure);
        try (Admin admin = Admin.create(ap)) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
            check(d.type() == GroupType.CONSUMER, "group type " + d.type());
        }
        members.remove(0).close();
        produce(bootstrap, 1800, 2400);
        waitFor(seen, 2400, failure);
        for (Member m : members) {
            m.close();
        }
        check(failure.get() == null, String.valueOf(failure.get()));
        check(seen.size() == 2400, "consumed " + seen.size() + " of 2400");
        System.out.println("java consumer protocol ok");
    }

    /** One consumer-protocol member polling on its own thread. */
    private static final class Member {
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread;

        Member(String bootstrap, String name, Map<String, String> seen, AtomicReference<String> failure) {
            Properties p = consumerProps(bootstrap, name);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            thread = new Thread(() -> {
                try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                    // As a careful application does: what was read from a
                    // partition is committed before the partition goes, so
                    // its next owner starts after it.
                    c.subscribe(List.of(TOPIC), new ConsumerRebalanceListener() {
                        @Override
                        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                            c.commitSync();
                        }

                        @Override
                        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        }
                    });
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                            record(seen, failure, name, r.value());
                        }
                        try {
                            c.commitSync();
                        } catch (CommitFailedException e) {
                            // A commit that crossed the heartbeat which moved
                            // this member to a new epoch is refused with
                            // STALE_MEMBER_EPOCH, by Kafka as by disgw; the
                            // next round commits the same positions again.
                        }
                    }
                } catch (Exception e) {
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    failure.compareAndSet(null, name + ": " + trace);
                }
            });
            thread.start();
        }

        void close() throws InterruptedException {
            stop.set(true);
            thread.join();
        }
    }

    private static Properties consumerProps(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return p;
    }

    private static void record(Map<String, String> seen, AtomicReference<String> failure, String who, String value) {
        String prev = seen.putIfAbsent(value, who);
        if (prev != null) {
            failure.compareAndSet(null, value + " consumed by " + prev + " and " + who);
        }
    }

    private static void produce(String bootstrap, int from, int to) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(TOPIC, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    private static void waitFor(Map<String, String> seen, int n, AtomicReference<String> failure) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (seen.size() < n && failure.get() == null && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        check(failure.get() == null, String.valueOf(failure.get()));
        check(seen.size() >= n, "consumed " + seen.size() + " of " + n);
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("java consumer protocol failed: " + what);
            System.exit(1);
        }
    }
}
