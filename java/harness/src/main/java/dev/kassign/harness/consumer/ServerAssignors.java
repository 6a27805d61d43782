package dev.kassign.harness.consumer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;
import dev.kassign.harness.Json;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;

/**
 * KIP-848's server-side assignors of the group coordinator ({@code uniform}, {@code server-range}),
 * given the group as the coordinator's {@code GroupSpecImpl} and {@code SubscribedTopicDescriberImpl}
 * present it (the iteration orders documented in java/harness/README.md).
 */
public final class ServerAssignors implements Handler {

    /** A member as the coordinator's {@code MemberSubscriptionAndAssignmentImpl} shows it. */
    private record Member(Optional<String> rackId, Optional<String> instanceId, Set<Uuid> subscribedTopicIds,
                          Map<Uuid, Set<Integer>> partitions) implements MemberSubscription, MemberAssignment {
    }

    /** The group as {@code GroupSpecImpl} shows it. */
    private record Spec(Map<String, Member> members, SubscriptionType subscriptionType,
                        Map<Uuid, Map<Integer, String>> inverted) implements GroupSpec {
        @Override
        public Collection<String> memberIds() {
            return members.keySet();
        }

        @Override
        public boolean isPartitionAssigned(Uuid topicId, int partitionId) {
            Map<Integer, String> m = inverted.get(topicId);
            return m != null && m.containsKey(partitionId);
        }

        @Override
        public boolean isPartitionAssignable(Uuid topicId, int partitionId) {
            return true;
        }

        @Override
        public MemberSubscription memberSubscription(String memberId) {
            Member m = members.get(memberId);
            if (m == null) {
                throw new IllegalArgumentException("Member Id " + memberId + " not found.");
            }
            return m;
        }

        @Override
        public MemberAssignment memberAssignment(String memberId) {
            Member m = members.get(memberId);
            return m == null ? () -> java.util.Collections.unmodifiableMap(new HashMap<>()) : m;
        }
    }

    /** The topics as {@code SubscribedTopicDescriberImpl} shows them. */
    private record Topics(Map<Uuid, ConsumerInstance.Topic> byId) implements SubscribedTopicDescriber {
        @Override
        public int numPartitions(Uuid topicId) {
            ConsumerInstance.Topic t = byId.get(topicId);
            return t == null ? -1 : t.partitions();
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            ConsumerInstance.Topic t = byId.get(topicId);
            if (t == null || partition >= t.racks().size()) {
                return Set.of();
            }
            return new HashSet<>(t.racks().get(partition));
        }
    }

    private static ConsumerGroupPartitionAssignor newAssignor(String name) throws ReflectiveOperationException {
        String cls = switch (name) {
            case "uniform" -> "UniformAssignor";
            case "server-range" -> "RangeAssignor";
            default -> throw new IllegalArgumentException("not a KIP-848 assignor: " + name);
        };
        return (ConsumerGroupPartitionAssignor) Class.forName("org.apache.kafka.coordinator.group.assignor." + cls)
            .getDeclaredConstructor().newInstance();
    }

    /** A topic id from its UUID string or Kafka's base64 form. */
    static Uuid uuid(String text) {
        if (text.length() == 22) {
            return Uuid.fromString(text);
        }
        java.util.UUID u = java.util.UUID.fromString(text);
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        ConsumerInstance inst = new ConsumerInstance(Json.required(request, "instance", "request"));
        Map<String, Uuid> ids = new HashMap<>();
        Map<Uuid, String> names = new HashMap<>();
        Map<Uuid, ConsumerInstance.Topic> byId = new HashMap<>();
        for (ConsumerInstance.Topic t : inst.topics.values()) {
            if (t.id() == null) {
                throw new IllegalArgumentException("instance.topics." + t.name() + ".id: required by the harness");
            }
            Uuid id = uuid(t.id());
            ids.put(t.name(), id);
            names.put(id, t.name());
            byId.put(id, t);
        }
        Map<String, Member> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<String>> distinct = new HashSet<>();
        for (ConsumerInstance.Member m : inst.members) {
            // The coordinator keeps the subscribed names in a HashSet and shows ids as a view over it.
            List<String> existing = new ArrayList<>();
            for (String t : m.topics()) {
                if (ids.containsKey(t) && !existing.contains(t)) {
                    existing.add(t);
                }
            }
            Set<String> nameSet = new HashSet<>(existing);
            distinct.add(nameSet);
            Set<Uuid> subscribed = new LinkedHashSet<>();
            nameSet.forEach(t -> subscribed.add(ids.get(t)));
            // A member's current assignment as the coordinator holds it in memory: a HashMap filled by put in
            // the listed topic order (a key that shares a bucket goes to the bucket's tail; with
            // computeIfAbsent it would go to the head), each topic's partitions added one by one to a new
            // HashSet in the listed order, as the assignor that made the assignment built it (the fixtures'
            // convention). Assignment.fromRecord's copy (new HashSet<>(list)) sizes the table the same way on
            // Java 19 and later; on Java 17 it is twice as large at 12, 24, 48... partitions.
            Map<Uuid, Set<Integer>> current = new HashMap<>();
            m.owned().forEach((topic, ps) -> {
                Uuid id = ids.get(topic);
                if (id == null || current.containsKey(id)) {
                    return;
                }
                Set<Integer> set = new HashSet<>();
                set.addAll(ps);
                current.put(id, set);
                for (Integer p : ps) {
                    inverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, m.id());
                }
            });
            // The coordinator's Assignment wraps its map as unmodifiable; the assignors check that.
            members.put(m.id(), new Member(Optional.ofNullable(m.rack()), Optional.ofNullable(m.instanceId()),
                subscribed, java.util.Collections.unmodifiableMap(current)));
        }
        SubscriptionType type = distinct.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        GroupAssignment result = newAssignor(request.get("assignor").asText())
            .assign(new Spec(members, type, inverted), new Topics(byId));
        ObjectNode assignment = Json.object();
        for (ConsumerInstance.Member m : inst.members) {
            MemberAssignment a = result.members().get(m.id());
            Map<String, Set<Integer>> byTopic = new TreeMap<>();
            if (a != null) {
                a.partitions().forEach((id, ps) -> {
                    if (!ps.isEmpty()) {
                        byTopic.put(names.get(id), ps);
                    }
                });
            }
            ObjectNode mo = assignment.putObject(m.id());
            byTopic.forEach((t, ps) -> mo.set(t, Json.sortedInts(ps)));
        }
        ObjectNode out = Json.object();
        out.set("assignment", assignment);
        return out;
    }
}
