package dev.kassign.harness.consumer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;
import dev.kassign.harness.Json;
import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * The classic-protocol assignors of kafka-clients, run as a group leader runs them:
 * {@code range}, {@code roundrobin}, {@code sticky} (eager) and {@code cooperative-sticky}.
 * See java/harness/README.md for how each member's subscription is built.
 */
public final class ClassicAssignors implements Handler {
    private static final String PKG = "org.apache.kafka.clients.consumer.";

    private static ConsumerPartitionAssignor newAssignor(String name) throws ReflectiveOperationException {
        String cls = switch (name) {
            case "range" -> "RangeAssignor";
            case "roundrobin" -> "RoundRobinAssignor";
            case "sticky" -> "StickyAssignor";
            case "cooperative-sticky" -> "CooperativeStickyAssignor";
            default -> throw new IllegalArgumentException("not a classic assignor: " + name);
        };
        return (ConsumerPartitionAssignor) Class.forName(PKG + cls).getDeclaredConstructor().newInstance();
    }

    /** A broker per rack named in the topics (one rack-less broker when none is), partitions on them. */
    static Cluster cluster(ConsumerInstance inst) {
        java.util.TreeSet<String> racks = new java.util.TreeSet<>();
        for (ConsumerInstance.Topic t : inst.topics.values()) {
            t.racks().forEach(racks::addAll);
        }
        Map<String, Node> byRack = new TreeMap<>();
        int id = 0;
        for (String r : racks) {
            byRack.put(r, new Node(id, "broker" + id, 9092, r));
            id++;
        }
        Node plain = new Node(id, "broker" + id, 9092);
        List<Node> nodes = new ArrayList<>(byRack.values());
        nodes.add(plain);
        List<PartitionInfo> parts = new ArrayList<>();
        for (ConsumerInstance.Topic t : inst.topics.values()) {
            for (int p = 0; p < t.partitions(); p++) {
                Node[] replicas;
                if (p < t.racks().size() && !t.racks().get(p).isEmpty()) {
                    List<String> rs = t.racks().get(p);
                    replicas = new Node[rs.size()];
                    for (int i = 0; i < rs.size(); i++) {
                        replicas[i] = byRack.get(rs.get(i));
                    }
                } else {
                    replicas = new Node[] {plain};
                }
                parts.add(new PartitionInfo(t.name(), p, replicas[0], replicas, replicas));
            }
        }
        return new Cluster("kassign", nodes, parts, Collections.emptySet(), Collections.emptySet());
    }

    /** The member's owned partitions, sorted by topic then partition (the protocol sorts them). */
    static List<TopicPartition> ownedSorted(ConsumerInstance.Member m) {
        List<TopicPartition> out = new ArrayList<>();
        new TreeMap<>(m.owned()).forEach((topic, ps) -> {
            List<Integer> sorted = new ArrayList<>(ps);
            sorted.sort(null);
            sorted.forEach(p -> out.add(new TopicPartition(topic, p)));
        });
        return out;
    }

    /** A Subscription through the richest constructor this release has (generation and rack from 3.4). */
    static Subscription subscription(List<String> topics, ByteBuffer userData, List<TopicPartition> owned,
                                     int generation, String rack) throws ReflectiveOperationException {
        try {
            Constructor<Subscription> c = Subscription.class.getConstructor(List.class, ByteBuffer.class,
                List.class, int.class, Optional.class);
            return c.newInstance(topics, userData, owned, generation, Optional.ofNullable(rack));
        } catch (NoSuchMethodException e) {
            return new Subscription(topics, userData, owned);
        }
    }

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        String name = request.get("assignor").asText();
        ConsumerInstance inst = new ConsumerInstance(Json.required(request, "instance", "request"));
        boolean sticky = name.equals("sticky") || name.equals("cooperative-sticky");
        boolean cooperative = name.equals("cooperative-sticky");
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (ConsumerInstance.Member m : inst.members) {
            List<String> topics = new ArrayList<>(m.topics());
            topics.sort(null);
            List<TopicPartition> owned = ownedSorted(m);
            ByteBuffer userData = null;
            if (sticky) {
                // The member's own assignor instance, told its last assignment as a real client's is.
                ConsumerPartitionAssignor own = newAssignor(name);
                if (m.hasOwned() || m.generation() >= 0 || cooperative) {
                    own.onAssignment(new Assignment(owned), new ConsumerGroupMetadata("kassign", m.generation(),
                        m.id(), Optional.ofNullable(m.instanceId())));
                }
                userData = own.subscriptionUserData(new HashSet<>(topics));
            }
            Subscription sub = subscription(topics, userData, cooperative ? owned : List.of(), m.generation(),
                m.rack());
            // Through the consumer protocol, as the coordinator hands the leader the member's bytes.
            Subscription parsed = ConsumerProtocol.deserializeSubscription(ConsumerProtocol.serializeSubscription(sub));
            parsed.setGroupInstanceId(Optional.ofNullable(m.instanceId()));
            subscriptions.put(m.id(), parsed);
        }
        ConsumerPartitionAssignor leader = newAssignor(name);
        ConsumerPartitionAssignor.GroupAssignment result = leader.assign(cluster(inst),
            new GroupSubscription(subscriptions));
        ObjectNode assignment = Json.object();
        for (ConsumerInstance.Member m : inst.members) {
            Assignment a = result.groupAssignment().get(m.id());
            Map<String, List<Integer>> byTopic = new TreeMap<>();
            if (a != null) {
                for (TopicPartition tp : a.partitions()) {
                    byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
                }
            }
            ObjectNode mo = assignment.putObject(m.id());
            byTopic.forEach((t, ps) -> mo.set(t, Json.sortedInts(ps)));
        }
        ObjectNode out = Json.object();
        out.set("assignment", assignment);
        return out;
    }

}
