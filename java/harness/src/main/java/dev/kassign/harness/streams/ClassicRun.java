package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Json;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.InternalTopicManager;
import org.apache.kafka.streams.processor.internals.TopologyMetadata.Subtopology;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.LegacyTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

/** The Kafka-typed half of {@link ClassicTaskAssignors} (Kafka 3.8+ classes only). */
final class ClassicRun {
    private ClassicRun() {
    }

    static ObjectNode run(String name, StreamsInstance inst) {
        LegacyTaskAssignor assignor = switch (name) {
            case "high-availability" -> new HighAvailabilityTaskAssignor();
            case "sticky-task" -> new LegacyStickyTaskAssignor();
            default -> throw new IllegalArgumentException("not a classic Streams task assignor: " + name);
        };
        // Tasks (in TaskId order): allTasks = new HashSet<>(tasks) (the copy constructor), stateful tasks added one by one.
        List<TaskId> taskList = new ArrayList<>();
        Set<TaskId> statefulTasks = new HashSet<>();
        Map<String, TaskId> ids = new HashMap<>();
        for (StreamsInstance.Task t : inst.tasks) {
            TaskId id = new TaskId(t.subtopology(), t.partition());
            ids.put(t.id(), id);
            taskList.add(id);
            if (t.stateful()) {
                statefulTasks.add(id);
            }
        }
        Set<TaskId> allTasks = new HashSet<>(taskList);

        // Clients: the leader's HashMap<ProcessId, ClientState>, filled in the order of `clients`.
        Map<ProcessId, ClientState> clients = new HashMap<>();
        Map<ProcessId, String> clientIds = new HashMap<>();
        Map<ProcessId, Map<String, Optional<String>>> racksForProcessConsumer = new HashMap<>();
        for (StreamsInstance.Client c : inst.clients) {
            ProcessId pid = new ProcessId(UUID.fromString(c.processId()));
            Map<TaskId, Long> lagTotals = new HashMap<>();
            for (StreamsInstance.Task t : inst.tasks) {
                if (t.stateful()) {
                    lagTotals.put(ids.get(t.id()), StreamsInstance.lag(c, t));
                }
            }
            Set<TaskId> prevActive = new HashSet<>();
            for (String t : c.active()) {
                prevActive.add(taskId(ids, t));
            }
            // Kafka derives previous standbys from the reported offset sums: every task with state that is
            // not a previous active (the instance's `standby` and every task with a `lags` entry).
            Set<TaskId> prevStandby = new HashSet<>();
            for (String t : c.standby()) {
                prevStandby.add(taskId(ids, t));
            }
            for (String t : c.lags().keySet()) {
                prevStandby.add(taskId(ids, t));
            }
            prevStandby.removeAll(prevActive);
            ClientState state = new ClientState(prevActive, prevStandby, lagTotals, c.clientTags(), c.capacity(), pid);
            if (clients.put(pid, state) != null) {
                throw new IllegalArgumentException("instance.clients: two clients share process id " + c.processId());
            }
            clientIds.put(pid, c.id());
            racksForProcessConsumer.computeIfAbsent(pid, k -> new HashMap<>())
                .put(c.id() + "-consumer", StreamsInstance.rack(c));
        }

        AssignmentConfigs configs = new AssignmentConfigs(inst.acceptableRecoveryLag, inst.maxWarmupReplicas,
            inst.numStandbyReplicas, inst.probingRebalanceIntervalMs, inst.rackAwareAssignmentTags,
            inst.trafficCost == null ? OptionalInt.empty() : OptionalInt.of(inst.trafficCost),
            inst.nonOverlapCost == null ? OptionalInt.empty() : OptionalInt.of(inst.nonOverlapCost),
            inst.rackAwareStrategy);
        RackAwareTaskAssignor rackAware = rackAwareTaskAssignor(inst, ids, racksForProcessConsumer, configs);

        boolean probing = assignor.assign(clients, allTasks, statefulTasks, rackAware, configs);

        ObjectNode assignment = Json.object();
        for (StreamsInstance.Client c : inst.clients) {
            ClientState state = clients.get(new ProcessId(UUID.fromString(c.processId())));
            assignment.set(c.id(), StreamsInstance.activeStandby(names(state.activeTasks()), names(state.standbyTasks())));
        }
        ObjectNode out = Json.object();
        out.set("assignment", assignment);
        out.put("probing_rebalance", probing);
        if (name.equals("high-availability")) {
            out.put("rack_aware", rackAware.canEnableRackAwareAssignor());
        }
        return out;
    }

    private static TaskId taskId(Map<String, TaskId> ids, String id) {
        TaskId t = ids.get(id);
        if (t != null) {
            return t;
        }
        int[] sp = StreamsInstance.parseTaskId(id, "instance.clients[]");
        return new TaskId(sp[0], sp[1]);
    }

    private static List<String> names(Set<TaskId> tasks) {
        List<String> out = new ArrayList<>();
        for (TaskId t : tasks) {
            out.add(t.subtopology() + "_" + t.partition());
        }
        return out;
    }

    /**
     * KIP-925's {@code RackAwareTaskAssignor} over the instance's racks, built as {@code StreamsPartitionAssignor}
     * builds it. Topics have no names in the instance (no two tasks share a partition, and Kafka's cost only asks
     * whether a partition has a replica on the client's rack), so each source or changelog partition of a task
     * becomes partition 0 of a topic of its own. The cluster has one broker per rack; a partition whose racks are
     * not given gets a replica on a broker without a rack, which turns rack awareness off as in Kafka.
     */
    private static RackAwareTaskAssignor rackAwareTaskAssignor(StreamsInstance inst, Map<String, TaskId> ids,
            Map<ProcessId, Map<String, Optional<String>>> racksForProcessConsumer, AssignmentConfigs configs) {
        if (StreamsConfig.RACK_AWARE_ASSIGNMENT_STRATEGY_NONE.equals(inst.rackAwareStrategy)) {
            // canEnableRackAwareAssignor() answers false before it reads any topic (saves building them).
            return new RackAwareTaskAssignor(Cluster.empty(), Map.of(), Map.of(), Map.of(), racksForProcessConsumer,
                null, configs, Time.SYSTEM);
        }
        Map<String, Node> brokers = new HashMap<>();
        Node rackless = new Node(0, "broker-0", 9092);
        List<PartitionInfo> partitions = new ArrayList<>();
        Map<TaskId, Set<TopicPartition>> partitionsForTask = new HashMap<>();
        Map<TaskId, Set<TopicPartition>> changelogPartitionsForTask = new HashMap<>();
        Map<String, List<TopicPartitionInfo>> changelogInfo = new HashMap<>();
        Map<Subtopology, Set<TaskId>> tasksForTopicGroup = new HashMap<>();
        for (StreamsInstance.Task t : inst.tasks) {
            TaskId id = ids.get(t.id());
            tasksForTopicGroup.computeIfAbsent(new Subtopology(t.subtopology(), null), k -> new HashSet<>()).add(id);
            Set<TopicPartition> source = new HashSet<>();
            List<List<String>> sourceRacks = t.sourceRacks() == null ? List.of(List.of()) : t.sourceRacks();
            for (int k = 0; k < sourceRacks.size(); k++) {
                String topic = "source-" + t.id() + "-" + k;
                source.add(new TopicPartition(topic, 0));
                Node[] replicas = replicas(sourceRacks.get(k), brokers, rackless).toArray(new Node[0]);
                partitions.add(new PartitionInfo(topic, 0, replicas[0], replicas, replicas));
            }
            partitionsForTask.put(id, source);
            Set<TopicPartition> changelog = new HashSet<>();
            if (t.stateful()) {
                List<List<String>> racks = t.changelogRacks() == null ? List.of(List.of()) : t.changelogRacks();
                for (int k = 0; k < racks.size(); k++) {
                    String topic = "changelog-" + t.id() + "-" + k;
                    changelog.add(new TopicPartition(topic, 0));
                    List<Node> replicas = replicas(racks.get(k), brokers, rackless);
                    changelogInfo.put(topic, List.of(new TopicPartitionInfo(0, replicas.get(0), replicas, replicas)));
                }
            }
            changelogPartitionsForTask.put(id, changelog);
        }
        List<Node> nodes = new ArrayList<>(brokers.values());
        nodes.add(rackless);
        Cluster cluster = new Cluster("kassign", nodes, partitions, Collections.emptySet(), Collections.emptySet());
        return new RackAwareTaskAssignor(cluster, partitionsForTask, changelogPartitionsForTask, tasksForTopicGroup,
            racksForProcessConsumer, new DescribedTopics(changelogInfo), configs, Time.SYSTEM);
    }

    private static List<Node> replicas(List<String> racks, Map<String, Node> brokers, Node rackless) {
        List<Node> out = new ArrayList<>();
        for (String rack : racks) {
            out.add(brokers.computeIfAbsent(rack, r -> new Node(brokers.size() + 1, "broker-" + r, 9092, r)));
        }
        if (out.isEmpty()) {
            out.add(rackless);
        }
        return out;
    }

    /** An {@code InternalTopicManager} whose describe answers from the instance's changelog racks. */
    private static final class DescribedTopics extends InternalTopicManager {
        private static final StreamsConfig CONFIG = new StreamsConfig(Map.of(
            StreamsConfig.APPLICATION_ID_CONFIG, "kassign", StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092"));
        private final Map<String, List<TopicPartitionInfo>> topics;

        DescribedTopics(Map<String, List<TopicPartitionInfo>> topics) {
            super(Time.SYSTEM, null, CONFIG);
            this.topics = topics;
        }

        @Override
        public Map<String, List<TopicPartitionInfo>> getTopicPartitionInfo(Set<String> names) {
            Map<String, List<TopicPartitionInfo>> out = new HashMap<>();
            for (String n : names) {
                if (topics.containsKey(n)) {
                    out.put(n, topics.get(n));
                }
            }
            return out;
        }
    }
}
