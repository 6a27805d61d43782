package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Harness;
import dev.kassign.harness.Json;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A kassign/v1 Streams instance ({@code "protocol": "streams"}) read into plain Java values, in document
 * order (the order Kafka's hash maps and sets are filled in; see java/harness/README.md, "Kafka Streams").
 * Holds no Kafka class, so it loads on every release.
 */
final class StreamsInstance {
    /** Kafka's {@code Task.LATEST_OFFSET}: the lag of a task the client ran as an active. */
    static final long LATEST_OFFSET = -2L;
    /** Kafka's {@code SubscriptionInfo.UNKNOWN_OFFSET_SUM}: state on disk, lag unknown (a {@code null} lag). */
    static final long UNKNOWN_OFFSET_SUM = -3L;
    /** The lag of a client with no state for a task: the task's whole end offset sum, here the largest long. */
    static final long NO_STATE = Long.MAX_VALUE;

    /** One task ({@code tasks[]}, or derived from {@code subtopologies[]}). */
    record Task(String id, int subtopology, int partition, boolean stateful,
                List<List<String>> sourceRacks, List<List<String>> changelogRacks) {
    }

    /** One KIP-1071 member of a process ({@code clients[].members[]}). */
    record Member(String id, List<String> active, List<String> standby,
                  List<String> currentActive, List<String> currentStandby, Map<String, Long> taskOffsets) {
        /** The actives the member currently owns ({@code current_active}, else {@code active}). */
        List<String> ownedActive() {
            return currentActive == null ? active : currentActive;
        }

        /** The standbys the member currently owns ({@code current_standby}, else {@code standby}). */
        List<String> ownedStandby() {
            return currentStandby == null ? standby : currentStandby;
        }
    }

    /** One client (Kafka Streams process, {@code clients[]}). */
    record Client(String id, String processId, int capacity, String rack, List<String> active,
                  List<String> standby, Map<String, Long> lags, Map<String, String> clientTags,
                  List<Member> members) {
    }

    final List<Task> tasks = new ArrayList<>();
    final Map<String, Task> taskById = new HashMap<>();
    final List<Client> clients = new ArrayList<>();
    final int numStandbyReplicas;
    final long acceptableRecoveryLag;
    final int maxWarmupReplicas;
    final long probingRebalanceIntervalMs;
    final String rackAwareStrategy;
    final Integer trafficCost;
    final Integer nonOverlapCost;
    final List<String> rackAwareAssignmentTags;
    /** The instance's {@code standby_task_order}, or null. */
    final List<String> standbyTaskOrder;

    private StreamsInstance(JsonNode inst) {
        if (!"streams".equals(Json.text(inst, "protocol", ""))) {
            throw new IllegalArgumentException("instance.protocol: a Streams task assignor needs \"streams\"");
        }
        JsonNode taskArray = inst.get("tasks");
        if (taskArray != null && !taskArray.isNull()) {
            int i = 0;
            for (JsonNode t : taskArray) {
                String id = Json.required(t, "id", "instance.tasks[" + i + "]").asText();
                int[] sp = parseTaskId(id, "instance.tasks[" + i + "].id");
                addTask(new Task(id, sp[0], sp[1], t.path("stateful").asBoolean(true),
                    racks(t.get("source_racks")), racks(t.get("changelog_racks"))));
                i++;
            }
        } else if (inst.get("subtopologies") != null) {
            // Kafka's PartitionGrouper: one task per partition number up to the largest source topic.
            for (JsonNode s : inst.get("subtopologies")) {
                int sub = s.get("id").asInt();
                int n = 0;
                for (JsonNode count : s.path("source_topics")) {
                    n = Math.max(n, count.asInt());
                }
                boolean stateful = s.path("stateful").asBoolean(true);
                for (int p = 0; p < n; p++) {
                    addTask(new Task(sub + "_" + p, sub, p, stateful, null, null));
                }
            }
        }
        // The instance's tasks are a set: a real leader fills its task maps and sets from its partition grouper,
        // sub-topology by sub-topology, never in the order someone listed them in a file. Every map and set below
        // is filled in Kafka's TaskId order (sub-topology, then partition), as kassign's Python fills its own.
        tasks.sort(Comparator.comparingInt(Task::subtopology).thenComparingInt(Task::partition));
        int i = 0;
        for (JsonNode c : inst.path("clients")) {
            String where = "instance.clients[" + i + "]";
            Map<String, Long> lags = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> e : Json.entries(c, "lags")) {
                lags.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asLong());
            }
            Map<String, String> tags = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> e : Json.entries(c, "client_tags")) {
                tags.put(e.getKey(), e.getValue().asText());
            }
            List<Member> members = null;
            if (c.get("members") != null && !c.get("members").isNull()) {
                members = new ArrayList<>();
                for (JsonNode m : c.get("members")) {
                    Map<String, Long> offsets = new LinkedHashMap<>();
                    for (Map.Entry<String, JsonNode> e : Json.entries(m, "task_offsets")) {
                        offsets.put(e.getKey(), e.getValue().asLong());
                    }
                    members.add(new Member(Json.required(m, "id", where + ".members[]").asText(),
                        Json.textList(m, "active"), Json.textList(m, "standby"),
                        optionalList(m, "current_active"), optionalList(m, "current_standby"), offsets));
                }
            }
            int capacity = (int) Json.integer(c, "capacity", members == null ? 1 : members.size());
            clients.add(new Client(Json.required(c, "id", where).asText(),
                Json.required(c, "process_id", where).asText(), capacity, Json.text(c, "rack", null),
                Json.textList(c, "active"), Json.textList(c, "standby"), lags, tags, members));
            i++;
        }
        JsonNode cfg = inst.path("config");
        numStandbyReplicas = (int) Json.integer(cfg, "num_standby_replicas", 0);
        acceptableRecoveryLag = Json.integer(cfg, "acceptable_recovery_lag", 10000);
        maxWarmupReplicas = (int) Json.integer(cfg, "max_warmup_replicas", 2);
        probingRebalanceIntervalMs = Json.integer(cfg, "probing_rebalance_interval_ms", 600000);
        rackAwareStrategy = Json.text(cfg, "rack_aware_assignment_strategy", "none");
        trafficCost = cfg.hasNonNull("rack_aware_assignment_traffic_cost")
            ? cfg.get("rack_aware_assignment_traffic_cost").asInt() : null;
        nonOverlapCost = cfg.hasNonNull("rack_aware_assignment_non_overlap_cost")
            ? cfg.get("rack_aware_assignment_non_overlap_cost").asInt() : null;
        rackAwareAssignmentTags = Json.textList(cfg, "rack_aware_assignment_tags");
        standbyTaskOrder = optionalList(inst, "standby_task_order");
    }

    /** Reads the request's {@code instance}. */
    static StreamsInstance of(JsonNode request) {
        return new StreamsInstance(Json.required(request, "instance", "request"));
    }

    private void addTask(Task t) {
        if (taskById.put(t.id(), t) != null) {
            throw new IllegalArgumentException("instance.tasks: duplicate task id '" + t.id() + "'");
        }
        tasks.add(t);
    }

    private static List<String> optionalList(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : Json.textList(node, field);
    }

    private static List<List<String>> racks(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        List<List<String>> out = new ArrayList<>();
        for (JsonNode partition : node) {
            List<String> racks = new ArrayList<>();
            partition.forEach(r -> racks.add(r.asText()));
            out.add(racks);
        }
        return out;
    }

    /** {@code "<subtopology>_<partition>"} -> the two ints, or an error naming {@code where}. */
    static int[] parseTaskId(String id, String where) {
        int cut = id.lastIndexOf('_');
        try {
            if (cut <= 0 || id.contains("__")) {
                throw new NumberFormatException();
            }
            return new int[] {Integer.parseInt(id.substring(0, cut)), Integer.parseInt(id.substring(cut + 1))};
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(where + ": '" + id + "' is not a task id \"<subtopology>_<partition>\"");
        }
    }

    /** Task ids in Kafka Streams' {@code TaskId} order (sub-topology, then partition, as ints). */
    static final Comparator<String> TASK_ORDER = Comparator
        .<String>comparingInt(t -> parseTaskId(t, "task")[0])
        .thenComparingInt(t -> parseTaskId(t, "task")[1]);

    /** A JSON array of task ids in {@code TaskId} order. */
    static ArrayNode sortedTasks(Collection<String> ids) {
        List<String> sorted = new ArrayList<>(ids);
        sorted.sort(TASK_ORDER);
        return Json.strings(sorted);
    }

    /** {@code {"active": [...], "standby": [...]}}, each sorted in {@code TaskId} order. */
    static ObjectNode activeStandby(Collection<String> active, Collection<String> standby) {
        ObjectNode o = Json.object();
        o.set("active", sortedTasks(active));
        o.set("standby", sortedTasks(standby));
        return o;
    }

    /** Kafka's lag for client {@code c} on stateful task {@code t} (what {@code ClientState.lagFor} returns). */
    static long lag(Client c, Task t) {
        if (c.active().contains(t.id())) {
            return LATEST_OFFSET;
        }
        if (c.lags().containsKey(t.id())) {
            Long lag = c.lags().get(t.id());
            return lag == null ? UNKNOWN_OFFSET_SUM : lag;
        }
        return c.standby().contains(t.id()) ? 0L : NO_STATE;
    }

    /** The subtopologies' task counts, keyed by sub-topology, ascending. */
    TreeMap<Integer, List<Task>> bySubtopology() {
        TreeMap<Integer, List<Task>> out = new TreeMap<>();
        for (Task t : tasks) {
            out.computeIfAbsent(t.subtopology(), k -> new ArrayList<>()).add(t);
        }
        return out;
    }

    /** The release on the classpath (for error messages). */
    static String kafkaVersion() {
        try {
            return Harness.kafkaVersion();
        } catch (Throwable e) {
            return "unknown";
        }
    }

    /** True when {@code className} is on the classpath. */
    static boolean hasClass(String className) {
        try {
            Class.forName(className, false, StreamsInstance.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** The empty optional of an absent rack. */
    static Optional<String> rack(Client c) {
        return Optional.ofNullable(c.rack());
    }
}
