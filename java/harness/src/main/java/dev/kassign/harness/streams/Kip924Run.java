package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Json;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.apache.kafka.streams.state.HostInfo;

/**
 * The Kafka-typed half of {@link Kip924Assignors}.
 *
 * <p>Kafka's standby pass walks the stateful tasks as a {@code HashSet<TaskInfo>}; Kafka's own
 * {@code DefaultTaskInfo} keeps the identity hash code, so that order (and with it the standbys) changes from
 * run to run. Here each task's {@code hashCode} is its position in the walk: the instance's
 * {@code standby_task_order} when given, else the stateful tasks in TaskId order. The answer reports the
 * order walked as {@code standby_task_order} whenever there are standbys to place.
 */
final class Kip924Run {
    private Kip924Run() {
    }

    static ObjectNode run(StreamsInstance inst) {
        List<String> walk = standbyWalk(inst);
        Map<String, Integer> position = new HashMap<>();
        for (int i = 0; i < walk.size(); i++) {
            position.put(walk.get(i), i);
        }
        Map<TaskId, TaskInfo> allTasks = new HashMap<>();
        Map<String, TaskId> ids = new HashMap<>();
        for (StreamsInstance.Task t : inst.tasks) {
            TaskId id = new TaskId(t.subtopology(), t.partition());
            ids.put(t.id(), id);
            allTasks.put(id, new Info(id, t, position.getOrDefault(t.id(), walk.size() + allTasks.size())));
        }
        Map<ProcessId, KafkaStreamsState> clients = new HashMap<>();
        for (StreamsInstance.Client c : inst.clients) {
            ProcessId pid = new ProcessId(UUID.fromString(c.processId()));
            if (clients.put(pid, new State(pid, c, inst, ids)) != null) {
                throw new IllegalArgumentException("instance.clients: two clients share process id " + c.processId());
            }
        }
        AssignmentConfigs configs = new AssignmentConfigs(inst.acceptableRecoveryLag, inst.maxWarmupReplicas,
            inst.numStandbyReplicas, inst.probingRebalanceIntervalMs, inst.rackAwareAssignmentTags,
            inst.trafficCost == null ? OptionalInt.empty() : OptionalInt.of(inst.trafficCost),
            inst.nonOverlapCost == null ? OptionalInt.empty() : OptionalInt.of(inst.nonOverlapCost),
            inst.rackAwareStrategy);
        ApplicationState app = new ApplicationState() {
            @Override
            public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(boolean computeTaskLags) {
                return clients;
            }

            @Override
            public AssignmentConfigs assignmentConfigs() {
                return configs;
            }

            @Override
            public Map<TaskId, TaskInfo> allTasks() {
                return allTasks;
            }
        };
        TaskAssignment result = new StickyTaskAssignor().assign(app);
        Map<ProcessId, KafkaStreamsAssignment> byProcess = new HashMap<>();
        boolean probing = false;
        for (KafkaStreamsAssignment a : result.assignment()) {
            byProcess.put(a.processId(), a);
            probing |= a.followupRebalanceDeadline().isPresent();
        }
        ObjectNode assignment = Json.object();
        for (StreamsInstance.Client c : inst.clients) {
            KafkaStreamsAssignment a = byProcess.get(new ProcessId(UUID.fromString(c.processId())));
            List<String> active = new ArrayList<>();
            List<String> standby = new ArrayList<>();
            if (a != null) {
                for (KafkaStreamsAssignment.AssignedTask t : a.tasks().values()) {
                    String id = t.id().subtopology() + "_" + t.id().partition();
                    (t.type() == KafkaStreamsAssignment.AssignedTask.Type.ACTIVE ? active : standby).add(id);
                }
            }
            assignment.set(c.id(), StreamsInstance.activeStandby(active, standby));
        }
        ObjectNode out = Json.object();
        out.set("assignment", assignment);
        out.put("probing_rebalance", probing);
        if (inst.numStandbyReplicas > 0 && !walk.isEmpty()) {
            out.set("standby_task_order", Json.strings(walk));
        }
        return out;
    }

    /** The order the standby pass walks the stateful tasks. */
    private static List<String> standbyWalk(StreamsInstance inst) {
        List<String> stateful = new ArrayList<>();
        for (StreamsInstance.Task t : inst.tasks) {
            if (t.stateful()) {
                stateful.add(t.id());
            }
        }
        if (inst.standbyTaskOrder == null) {
            return stateful;
        }
        Set<String> given = new LinkedHashSet<>(inst.standbyTaskOrder);
        if (given.size() != inst.standbyTaskOrder.size() || !given.equals(new HashSet<>(stateful))) {
            throw new IllegalArgumentException("instance.standby_task_order: must list every stateful task once");
        }
        return new ArrayList<>(given);
    }

    /** A task as Kafka Streams describes it to a KIP-924 assignor; its hash code is its place in the walk. */
    private static final class Info implements TaskInfo {
        private final TaskId id;
        private final boolean stateful;
        private final Set<TaskTopicPartition> partitions = new HashSet<>();
        private final int hash;

        Info(TaskId id, StreamsInstance.Task t, int hash) {
            this.id = id;
            this.stateful = t.stateful();
            this.hash = hash;
            List<List<String>> source = t.sourceRacks() == null ? null : t.sourceRacks();
            int n = source == null ? 1 : source.size();
            for (int k = 0; k < n; k++) {
                partitions.add(new Part(new TopicPartition("source-" + t.id() + "-" + k, 0), true,
                    source == null ? null : source.get(k)));
            }
            if (stateful) {
                List<List<String>> changelog = t.changelogRacks();
                int m = changelog == null ? 1 : changelog.size();
                for (int k = 0; k < m; k++) {
                    partitions.add(new Part(new TopicPartition("changelog-" + t.id() + "-" + k, 0), false,
                        changelog == null ? null : changelog.get(k)));
                }
            }
        }

        @Override
        public TaskId id() {
            return id;
        }

        @Override
        public boolean isStateful() {
            return stateful;
        }

        @Override
        public Set<String> stateStoreNames() {
            return stateful ? Set.of("store") : Set.of();
        }

        @Override
        public Set<TaskTopicPartition> topicPartitions() {
            return partitions;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            return this == o;
        }
    }

    private record Part(TopicPartition topicPartition, boolean isSource, List<String> racks)
            implements TaskTopicPartition {
        @Override
        public boolean isChangelog() {
            return !isSource;
        }

        @Override
        public Optional<Set<String>> rackIds() {
            return racks == null ? Optional.empty() : Optional.of(new HashSet<>(racks));
        }
    }

    /** A client as Kafka Streams describes it ({@code DefaultKafkaStreamsState}'s readings of the instance). */
    private static final class State implements KafkaStreamsState {
        private final ProcessId pid;
        private final StreamsInstance.Client client;
        private final SortedSet<TaskId> prevActive = new TreeSet<>();
        private final SortedSet<TaskId> prevStandby = new TreeSet<>();
        private final Map<TaskId, Long> lags = new TreeMap<>();

        State(ProcessId pid, StreamsInstance.Client c, StreamsInstance inst, Map<String, TaskId> ids) {
            this.pid = pid;
            this.client = c;
            for (String t : c.active()) {
                prevActive.add(id(ids, t));
            }
            for (String t : c.standby()) {
                prevStandby.add(id(ids, t));
            }
            for (String t : c.lags().keySet()) {
                prevStandby.add(id(ids, t));
            }
            prevStandby.removeAll(prevActive);
            for (StreamsInstance.Task t : inst.tasks) {
                if (t.stateful()) {
                    lags.put(ids.get(t.id()), StreamsInstance.lag(c, t));
                }
            }
        }

        private static TaskId id(Map<String, TaskId> ids, String t) {
            TaskId id = ids.get(t);
            if (id == null) {
                int[] sp = StreamsInstance.parseTaskId(t, "instance.clients[]");
                id = new TaskId(sp[0], sp[1]);
            }
            return id;
        }

        @Override
        public ProcessId processId() {
            return pid;
        }

        @Override
        public int numProcessingThreads() {
            return client.capacity();
        }

        @Override
        public SortedSet<String> consumerClientIds() {
            return new TreeSet<>(Set.of(client.id() + "-consumer"));
        }

        @Override
        public SortedSet<TaskId> previousActiveTasks() {
            return prevActive;
        }

        @Override
        public SortedSet<TaskId> previousStandbyTasks() {
            return prevStandby;
        }

        @Override
        public long lagFor(TaskId task) {
            Long lag = lags.get(task);
            if (lag == null) {
                throw new IllegalStateException("Tried to lookup lag for unknown task " + task);
            }
            return lag;
        }

        @Override
        public SortedSet<TaskId> prevTasksByLag(String consumerClientId) {
            SortedSet<TaskId> out = new TreeSet<>((a, b) -> {
                int c = Long.compare(lagFor(a), lagFor(b));
                return c != 0 ? c : a.compareTo(b);
            });
            out.addAll(prevActive);
            out.addAll(prevStandby);
            out.removeIf(t -> !lags.containsKey(t));
            return out;
        }

        @Override
        public Map<TaskId, Long> statefulTasksToLagSums() {
            return lags;
        }

        @Override
        public Optional<HostInfo> hostInfo() {
            return Optional.empty();
        }

        @Override
        public Map<String, String> clientTags() {
            return client.clientTags();
        }

        @Override
        public Optional<String> rackId() {
            return StreamsInstance.rack(client);
        }
    }
}
