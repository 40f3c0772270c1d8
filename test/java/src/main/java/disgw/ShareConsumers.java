package disgw;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives share groups (KIP-932) with the Java client's KafkaShareConsumer:
 * three consumers of one share group read a two-partition topic from the
 * start (share.auto.offset.reset=earliest, set on the GROUP resource with
 * incrementalAlterConfigs) and acknowledge explicitly: every tenth record
 * is rejected and never comes back, another tenth released and delivered
 * again with delivery count 2, then accepted; the rest are accepted. In the
 * end every record but the rejected ones was accepted exactly once.
 */
public final class ShareConsumers {
    private static final String TOPIC = "java-share";
    private static final String GROUP = "java-share-group";
    private static final int RECORDS = 1000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 2, (short) 1))).all().get();
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, GROUP);
            AlterConfigOp earliest = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(group, List.of(earliest))).all().get();
        }
        produce(bootstrap);

        Ledger ledger = new Ledger();
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            members.add(new Member(bootstrap, "share-" + i, ledger));
        }
        int want = RECORDS - RECORDS / 10;
        long deadline = System.currentTimeMillis() + 120_000;
        while (ledger.accepted.size() < want && ledger.failure.get() == null && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        // Longer than a poll round: a rejected or accepted record that came
        // back would be seen by now.
        Thread.sleep(3_000);
        for (Member m : members) {
            m.close();
        }
        check(ledger.failure.get() == null, String.valueOf(ledger.failure.get()));
        check(ledger.accepted.size() == want, "accepted " + ledger.accepted.size() + " of " + want);
        check(ledger.rejected.size() == RECORDS / 10, "rejected " + ledger.rejected.size() + " of " + RECORDS / 10);
        check(ledger.released.size() == RECORDS / 10, "released " + ledger.released.size() + " of " + RECORDS / 10);
        for (int i = 0; i < RECORDS; i++) {
            String v = "v" + i;
            check(ledger.rejected.contains(v) != ledger.accepted.containsKey(v), v + " both or neither rejected and accepted");
        }
        System.out.println("java share consumers ok");
    }

    /** What the members did with each record, by value. */
    private static final class Ledger {
        final Map<String, String> accepted = new ConcurrentHashMap<>();
        final Set<String> released = ConcurrentHashMap.newKeySet();
        final Set<String> rejected = ConcurrentHashMap.newKeySet();
        final AtomicReference<String> failure = new AtomicReference<>();

        void fail(String what) {
            failure.compareAndSet(null, what);
        }

        /** How to acknowledge r, by its number and delivery count. */
        AcknowledgeType decide(ConsumerRecord<String, String> r) {
            String v = r.value();
            int n = Integer.parseInt(v.substring(1));
            short count = r.deliveryCount().orElse((short) -1);
            if (rejected.contains(v) || accepted.containsKey(v)) {
                fail(v + " delivered again after it was " + (rejected.contains(v) ? "rejected" : "accepted"));
            }
            switch (n % 10) {
                case 3:
                    if (count != 1) {
                        fail(v + ", to be rejected, came with delivery count " + count);
                    }
                    return AcknowledgeType.REJECT;
                case 7:
                    if (count == 1) {
                        return AcknowledgeType.RELEASE;
                    }
                    if (count != 2) {
                        fail(v + ", released once, came with delivery count " + count);
                    }
                    return AcknowledgeType.ACCEPT;
                default:
                    if (count != 1) {
                        fail(v + " came with delivery count " + count);
                    }
                    return AcknowledgeType.ACCEPT;
            }
        }

        /** Records that r was acknowledged with t by who, once that is durable. */
        void done(ConsumerRecord<String, String> r, AcknowledgeType t, String who) {
            String v = r.value();
            switch (t) {
                case REJECT:
                    rejected.add(v);
                    break;
                case RELEASE:
                    released.add(v);
                    break;
                default:
                    String prev = accepted.putIfAbsent(v, who);
                    if (prev != null) {
                        fail(v + " accepted by " + prev + " and " + who);
                    }
            }
        }
    }

    /** One share consumer polling on its own thread. */
    private static final class Member {
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread;

        Member(String bootstrap, String name, Ledger ledger) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put("share.acknowledgement.mode", "explicit");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            thread = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(TOPIC));
                    while (!stop.get()) {
                        List<ConsumerRecord<String, String>> polled = new ArrayList<>();
                        List<AcknowledgeType> types = new ArrayList<>();
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                            AcknowledgeType t = ledger.decide(r);
                            c.acknowledge(r, t);
                            polled.add(r);
                            types.add(t);
                        }
                        if (polled.isEmpty()) {
                            continue;
                        }
                        Map<TopicIdPartition, Optional<KafkaException>> acked = c.commitSync();
                        for (int i = 0; i < polled.size(); i++) {
                            ConsumerRecord<String, String> r = polled.get(i);
                            Optional<KafkaException> err = failed(acked.entrySet(), r);
                            if (err.isPresent()) {
                                ledger.fail(name + ": acknowledging " + r.value() + ": " + err.get());
                            } else {
                                ledger.done(r, types.get(i), name);
                            }
                        }
                    }
                } catch (Exception e) {
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    ledger.fail(name + ": " + trace);
                }
            });
            thread.start();
        }

        /** The error commitSync answered for r's partition, if any. */
        private static Optional<KafkaException> failed(Collection<Map.Entry<TopicIdPartition, Optional<KafkaException>>> acked, ConsumerRecord<String, String> r) {
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : acked) {
                if (e.getKey().topic().equals(r.topic()) && e.getKey().partition() == r.partition()) {
                    return e.getValue();
                }
            }
            return Optional.empty();
        }

        void close() throws InterruptedException {
            stop.set(true);
            thread.join();
        }
    }

    private static void produce(String bootstrap) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(TOPIC, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("java share consumers failed: " + what);
            System.exit(1);
        }
    }
}
