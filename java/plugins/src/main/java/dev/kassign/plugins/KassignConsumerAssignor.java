package dev.kassign.plugins;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The classic group protocol's client-side assignor backed by {@code kassign serve}, for Java consumers
 * ({@code partition.assignment.strategy=dev.kassign.plugins.KassignConsumerAssignor}); the group leader runs it.
 *
 * <p>It speaks both rebalance protocols (COOPERATIVE and EAGER). Under the cooperative protocol a partition that
 * the answer moves from one member to another is withheld from its new member in this round (the old owner
 * revokes it and rejoins, and the next round hands it over), as {@link CooperativeStickyAssignor} does, so the
 * two-phase revocation holds: no partition is added to one member while another still owns it. Claims are taken
 * as the members state them ({@code ownedPartitions}): a partition any other member still claims is withheld,
 * whatever the claim's generation, which is what the consumer's own {@code validateCooperativeAssignment}
 * requires of an assignor other than cooperative-sticky. Under EAGER nothing is owned at assignment time, so
 * nothing is withheld.
 *
 * <p>The member's subscription user data and {@link #onAssignment} go to an embedded
 * {@link CooperativeStickyAssignor}, so that the fallback (on no answer within {@code kassign.deadline.ms}, an
 * error, or an answer that fails the check; a WARN line says why) sees the generations it expects. Settings come
 * from the consumer's properties ({@link KassignConfig}).
 */
public final class KassignConsumerAssignor implements ConsumerPartitionAssignor, Configurable {

    /** The assignor's name in the group's protocol list. */
    public static final String NAME = "kassign";

    private static final Logger LOG = LoggerFactory.getLogger(KassignConsumerAssignor.class);

    private final CooperativeStickyAssignor fallback = new CooperativeStickyAssignor();
    private volatile KassignClient client;
    private volatile Outcome lastOutcome;
    private volatile int lastWithheld;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        return List.of(RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER);
    }

    @Override
    public void configure(Map<String, ?> configs) {
        client = new KassignClient(KassignConfig.from(configs));
        client.warmUp();
    }

    @Override
    public ByteBuffer subscriptionUserData(Set<String> topics) {
        return fallback.subscriptionUserData(topics);
    }

    @Override
    public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
        fallback.onAssignment(assignment, metadata);
    }

    /** @return what the last {@link #assign} did, or null before the first */
    public Outcome lastOutcome() {
        return lastOutcome;
    }

    /** @return partitions withheld for cooperative revocation in the last kassign answer */
    public int lastWithheld() {
        return lastWithheld;
    }

    /**
     * The instance and what is needed to check the answer.
     *
     * @param instance      the kassign/v1 instance
     * @param subscriptions member id -> subscribed topics that exist
     * @param partitions    topic -> partition count
     */
    record Translation(Map<String, Object> instance, Map<String, Set<String>> subscriptions,
                       Map<String, Integer> partitions) {
    }

    /**
     * Translate the leader's view of the group into a kassign/v1 consumer instance.
     *
     * @param metadata the cluster metadata
     * @param group    the members' subscriptions
     * @return the translation
     */
    static Translation translate(Cluster metadata, GroupSubscription group) {
        Map<String, Subscription> subs = group.groupSubscription();
        Map<String, Integer> partitions = new TreeMap<>();
        boolean memberRacks = false;
        for (Subscription s : subs.values()) {
            memberRacks |= s.rackId().isPresent();
            for (String topic : s.topics()) {
                Integer n = metadata.partitionCountForTopic(topic);
                if (n != null) {
                    partitions.put(topic, n);
                }
            }
        }
        Map<String, Object> topics = new LinkedHashMap<>();
        for (Map.Entry<String, Integer> e : partitions.entrySet()) {
            Map<String, Object> topic = new LinkedHashMap<>();
            topic.put("partitions", e.getValue());
            Uuid id = metadata.topicId(e.getKey());
            if (id != null && !Uuid.ZERO_UUID.equals(id)) {
                topic.put("id", id.toString());
            }
            if (memberRacks) {
                List<List<String>> racks = new ArrayList<>();
                for (int p = 0; p < e.getValue(); p++) {
                    racks.add(new ArrayList<>());
                }
                boolean any = false;
                for (PartitionInfo info : metadata.partitionsForTopic(e.getKey())) {
                    if (info.partition() < 0 || info.partition() >= e.getValue() || info.replicas() == null) {
                        continue;
                    }
                    Set<String> r = new TreeSet<>();
                    for (Node n : info.replicas()) {
                        if (n != null && n.hasRack()) {
                            r.add(n.rack());
                        }
                    }
                    any |= !r.isEmpty();
                    racks.set(info.partition(), new ArrayList<>(r));
                }
                if (any) {
                    topic.put("racks", racks);
                }
            }
            topics.put(e.getKey(), topic.size() == 1 ? e.getValue() : topic);
        }
        Map<String, Set<String>> subscriptions = new LinkedHashMap<>();
        List<Object> members = new ArrayList<>();
        for (Map.Entry<String, Subscription> e : subs.entrySet()) {
            Subscription s = e.getValue();
            Set<String> subscribed = new TreeSet<>(s.topics());
            subscribed.retainAll(partitions.keySet());
            subscriptions.put(e.getKey(), subscribed);
            Map<String, Object> member = new LinkedHashMap<>();
            member.put("id", e.getKey());
            member.put("topics", new ArrayList<>(subscribed));
            Map<String, Set<Integer>> owned = new TreeMap<>();
            for (TopicPartition tp : s.ownedPartitions()) {
                Integer n = partitions.get(tp.topic());
                if (n != null && tp.partition() >= 0 && tp.partition() < n) {
                    owned.computeIfAbsent(tp.topic(), k -> new TreeSet<>()).add(tp.partition());
                }
            }
            if (!owned.isEmpty()) {
                Map<String, Object> ownedJson = new TreeMap<>();
                owned.forEach((t, ps) -> ownedJson.put(t, new ArrayList<>(ps)));
                member.put("owned", ownedJson);
            }
            s.generationId().ifPresent(g -> member.put("generation", g));
            s.groupInstanceId().ifPresent(v -> member.put("instance_id", v));
            s.rackId().ifPresent(v -> member.put("rack", v));
            members.add(member);
        }
        Map<String, Object> instance = new LinkedHashMap<>();
        instance.put("format", "kassign/v1");
        instance.put("protocol", "consumer");
        instance.put("topics", topics);
        instance.put("members", members);
        return new Translation(instance, subscriptions, partitions);
    }

    /**
     * Withhold, for the cooperative protocol, every partition given to a member that does not claim it while
     * another member still claims it.
     *
     * @param target the answer: member -> partitions
     * @param group  the subscriptions (with the members' owned partitions)
     * @return the first-round assignment
     */
    static Map<String, List<TopicPartition>> withhold(Map<String, List<TopicPartition>> target,
                                                      GroupSubscription group) {
        Map<TopicPartition, Set<String>> claims = new HashMap<>();
        group.groupSubscription().forEach((member, s) -> {
            for (TopicPartition tp : s.ownedPartitions()) {
                claims.computeIfAbsent(tp, k -> new HashSet<>()).add(member);
            }
        });
        Map<String, List<TopicPartition>> out = new LinkedHashMap<>();
        target.forEach((member, tps) -> {
            List<TopicPartition> kept = new ArrayList<>();
            for (TopicPartition tp : tps) {
                Set<String> owners = claims.getOrDefault(tp, Set.of());
                if (owners.isEmpty() || owners.contains(member)) {
                    kept.add(tp);
                }
            }
            out.put(member, kept);
        });
        return out;
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription group) {
        long start = System.nanoTime();
        KassignClient c = client;
        if (c == null) {
            c = new KassignClient(KassignConfig.from(null));
            client = c;
        }
        String reason;
        try {
            Translation t = translate(metadata, group);
            Map<?, ?> answer = c.assign(t.instance(), "optimal", start);
            Map<String, Map<String, Set<Integer>>> read = ConsumerAnswer.read(answer, t.subscriptions(), t.partitions());
            Map<String, List<TopicPartition>> target = new LinkedHashMap<>();
            read.forEach((member, topics) -> {
                List<TopicPartition> tps = new ArrayList<>();
                topics.forEach((topic, ps) -> ps.forEach(p -> tps.add(new TopicPartition(topic, p))));
                target.put(member, tps);
            });
            Map<String, List<TopicPartition>> first = withhold(target, group);
            int withheld = 0;
            Map<String, Assignment> out = new LinkedHashMap<>();
            for (Map.Entry<String, List<TopicPartition>> e : first.entrySet()) {
                withheld += target.get(e.getKey()).size() - e.getValue().size();
                out.put(e.getKey(), new Assignment(e.getValue()));
            }
            String status = KassignClient.status(answer);
            long ms = KassignClient.elapsedMs(start);
            lastWithheld = withheld;
            lastOutcome = new Outcome(false, null, status, ms);
            LOG.info("kassign assigned {} members in {} ms (status {}; {} partitions withheld until their owners "
                + "revoke them{})", out.size(), ms, status, withheld, KassignClient.serviceFallback(answer));
            return new GroupAssignment(out);
        } catch (KassignException e) {
            reason = e.getMessage();
        } catch (RuntimeException e) {
            reason = "internal error: " + e;
        }
        GroupAssignment result = fallback.assign(metadata, group);
        lastWithheld = 0;
        lastOutcome = new Outcome(true, reason, null, KassignClient.elapsedMs(start));
        LOG.warn("kassign: falling back to Kafka's '{}' assignor for a group of {} members: {}",
            fallback.name(), group.groupSubscription().size(), reason);
        return result;
    }
}
