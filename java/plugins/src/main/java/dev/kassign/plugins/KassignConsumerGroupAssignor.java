package dev.kassign.plugins;

import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * KIP-848's broker-side assignor backed by {@code kassign serve}: {@code group.consumer.assignors} names this
 * class, a consumer with {@code group.protocol=consumer} picks it with {@code group.remote.assignor=kassign}.
 *
 * <p>The group coordinator hands the assignor topic <em>ids</em>, never topic names, so the instance sent to the
 * service names each topic by its id ({@link Uuid#toString()}, Kafka's 22-character base64 form) and gives the
 * same string as the topic's {@code id}. Members keep their member ids, subscriptions, current target assignment
 * ({@code owned}), {@code instance_id} and {@code rack}; partition racks are sent when a member has a rack.
 *
 * <p>The answer is checked (every partition of a subscribed topic exactly once, only to a member that subscribes
 * to its topic, only members of the group). On no answer within {@code kassign.deadline.ms}, an error, or an
 * answer that fails the check, Kafka's own {@link UniformAssignor} assigns in-process and a WARN line says why.
 * Settings: {@link KassignConfig}; the coordinator passes the broker's configuration to {@link #configure}.
 */
public final class KassignConsumerGroupAssignor implements ConsumerGroupPartitionAssignor, Configurable {

    /** The name clients select with {@code group.remote.assignor}. */
    public static final String NAME = "kassign";

    private static final Logger LOG = LoggerFactory.getLogger(KassignConsumerGroupAssignor.class);

    private final UniformAssignor fallback = new UniformAssignor();
    private volatile KassignClient client;
    private volatile Outcome lastOutcome;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        client = new KassignClient(KassignConfig.from(configs));
        client.warmUp();
    }

    /** @return what the last {@link #assign} did, or null before the first */
    public Outcome lastOutcome() {
        return lastOutcome;
    }

    /**
     * The instance sent to the service and what is needed to check and read its answer.
     *
     * @param instance      the kassign/v1 instance
     * @param subscriptions member id -> subscribed topic names
     * @param partitions    topic name -> partition count
     * @param topicIds      topic name -> topic id
     */
    record Translation(Map<String, Object> instance, Map<String, Set<String>> subscriptions,
                       Map<String, Integer> partitions, Map<String, Uuid> topicIds) {
    }

    /**
     * Translate the coordinator's view of a group into a kassign/v1 consumer instance.
     *
     * @param spec      the group
     * @param describer the subscribed topics' partitions and racks
     * @return the translation
     */
    static Translation translate(GroupSpec spec, SubscribedTopicDescriber describer) {
        Map<String, Uuid> topicIds = new TreeMap<>();
        Map<String, Integer> partitions = new TreeMap<>();
        boolean memberRacks = false;
        for (String memberId : spec.memberIds()) {
            MemberSubscription sub = spec.memberSubscription(memberId);
            memberRacks |= sub.rackId().isPresent();
            for (Uuid id : sub.subscribedTopicIds()) {
                int n = describer.numPartitions(id);
                if (n >= 0) {
                    topicIds.put(id.toString(), id);
                    partitions.put(id.toString(), n);
                }
            }
        }
        Map<String, Object> topics = new LinkedHashMap<>();
        for (Map.Entry<String, Uuid> e : topicIds.entrySet()) {
            Map<String, Object> topic = new LinkedHashMap<>();
            int n = partitions.get(e.getKey());
            topic.put("partitions", n);
            topic.put("id", e.getKey());
            if (memberRacks) {
                List<Object> racks = new ArrayList<>();
                boolean any = false;
                for (int p = 0; p < n; p++) {
                    Set<String> r = new TreeSet<>(describer.racksForPartition(e.getValue(), p));
                    any |= !r.isEmpty();
                    racks.add(new ArrayList<>(r));
                }
                if (any) {
                    topic.put("racks", racks);
                }
            }
            topics.put(e.getKey(), topic);
        }
        Map<String, Set<String>> subscriptions = new LinkedHashMap<>();
        List<Object> members = new ArrayList<>();
        for (String memberId : spec.memberIds()) {
            MemberSubscription sub = spec.memberSubscription(memberId);
            Set<String> subscribed = new TreeSet<>();
            for (Uuid id : sub.subscribedTopicIds()) {
                if (partitions.containsKey(id.toString())) {
                    subscribed.add(id.toString());
                }
            }
            subscriptions.put(memberId, subscribed);
            Map<String, Object> member = new LinkedHashMap<>();
            member.put("id", memberId);
            member.put("topics", new ArrayList<>(subscribed));
            Map<String, Object> owned = new TreeMap<>();
            MemberAssignment current = spec.memberAssignment(memberId);
            if (current != null) {
                for (Map.Entry<Uuid, Set<Integer>> e : current.partitions().entrySet()) {
                    Integer n = partitions.get(e.getKey().toString());
                    if (n == null) {
                        continue; // a topic no member subscribes to any more, or deleted
                    }
                    List<Integer> ps = new ArrayList<>(new TreeSet<>(e.getValue()));
                    ps.removeIf(p -> p < 0 || p >= n);
                    if (!ps.isEmpty()) {
                        owned.put(e.getKey().toString(), ps);
                    }
                }
            }
            if (!owned.isEmpty()) {
                member.put("owned", owned);
            }
            sub.instanceId().ifPresent(v -> member.put("instance_id", v));
            sub.rackId().ifPresent(v -> member.put("rack", v));
            members.add(member);
        }
        Map<String, Object> instance = new LinkedHashMap<>();
        instance.put("format", "kassign/v1");
        instance.put("protocol", "consumer");
        instance.put("topics", topics);
        instance.put("members", members);
        return new Translation(instance, subscriptions, partitions, topicIds);
    }

    /** A member's partitions, as the coordinator reads them. */
    record Partitions(Map<Uuid, Set<Integer>> partitions) implements MemberAssignment {
    }

    @Override
    public GroupAssignment assign(GroupSpec spec, SubscribedTopicDescriber describer)
        throws PartitionAssignorException {
        long start = System.nanoTime();
        KassignClient c = client;
        if (c == null) {
            c = new KassignClient(KassignConfig.from(null));
            client = c;
        }
        String reason;
        try {
            Translation t = translate(spec, describer);
            Map<?, ?> answer = c.assign(t.instance(), "optimal", start);
            Map<String, Map<String, Set<Integer>>> read = ConsumerAnswer.read(answer, t.subscriptions(), t.partitions());
            Map<String, MemberAssignment> members = new HashMap<>();
            for (Map.Entry<String, Map<String, Set<Integer>>> e : read.entrySet()) {
                Map<Uuid, Set<Integer>> ps = new HashMap<>();
                e.getValue().forEach((topic, parts) -> ps.put(t.topicIds().get(topic), Set.copyOf(parts)));
                members.put(e.getKey(), new Partitions(Map.copyOf(ps)));
            }
            String status = KassignClient.status(answer);
            long ms = KassignClient.elapsedMs(start);
            lastOutcome = new Outcome(false, null, status, ms);
            LOG.info("kassign assigned {} members in {} ms (status {}{})", members.size(), ms, status,
                KassignClient.serviceFallback(answer));
            return new GroupAssignment(members);
        } catch (KassignException e) {
            reason = e.getMessage();
        } catch (RuntimeException e) {
            reason = "internal error: " + e;
        }
        GroupAssignment result = fallback.assign(spec, describer);
        long ms = KassignClient.elapsedMs(start);
        lastOutcome = new Outcome(true, reason, null, ms);
        LOG.warn("kassign: falling back to Kafka's '{}' assignor for a group of {} members: {}",
            fallback.name(), spec.memberIds().size(), reason);
        return result;
    }
}
