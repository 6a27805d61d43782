package dev.kassign.plugins;

import org.apache.kafka.common.Configurable;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentMetadata;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentState;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignor;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignorException;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

/**
 * KIP-1357's broker-side Streams task assignor backed by {@code kassign serve} ({@code optimal-streams}):
 * {@code group.streams.assignors} names this class, a Streams group picks it with the group config
 * {@code streams.assignor.name=kassign}.
 *
 * <p>Translation to kassign's Streams format (docs/streams.md): every task of the topology
 * ({@code "<subtopology>_<partition>"}, stateful as the topology says) is listed in {@code tasks}; each process is a
 * client ({@code id} the process id, {@code process_id} that UUID) whose {@code members} are its group members with
 * their current tasks ({@code active}; {@code standby} = standby and warm-up tasks) and the task offsets they
 * reported ({@code task_offsets}); the client's {@code lags} are, per stateful task the process does not run as
 * active, the smallest {@code end offset - offset} its members reported ({@code null} when no end offset is known).
 * Subtopology ids that are not non-negative integers are numbered by their position in the topology.
 * {@code num.standby.replicas} becomes {@code config.num_standby_replicas}; rack-aware assignment tags are not
 * sent (kassign's Streams model has one rack per client). {@code config.active_on_caught_up} is false: under
 * KIP-1071 the assignor's answer is the target assignment and the coordinator stages moves of state (warm-ups),
 * so actives may go to a process without state, which the optimum's restoration stage still counts.
 *
 * <p>The answer's per-member assignment is checked (every task active exactly once, standbys only of stateful
 * tasks, never on the process that runs the task or twice on one process, only members of the group); warm-ups
 * are given to Kafka as standbys. On no answer within {@code kassign.deadline.ms}, an error, or an answer that
 * fails the check, the coordinator's own {@link StickyTaskAssignor} assigns in-process and a WARN line says why.
 */
public final class KassignStreamsTaskAssignor implements TaskAssignor, Configurable {

    /** The name a Streams group selects with {@code streams.assignor.name}. */
    public static final String NAME = "kassign";

    private static final Logger LOG = LoggerFactory.getLogger(KassignStreamsTaskAssignor.class);

    private final StickyTaskAssignor fallback = new StickyTaskAssignor();
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
     * The instance and what is needed to read the answer back.
     *
     * @param instance     the kassign/v1 Streams instance
     * @param subtopology  kassign's subtopology number -> Kafka's subtopology id
     * @param stateful     task id -> stateful
     * @param processOf    member id -> process id
     */
    record Translation(Map<String, Object> instance, Map<Integer, String> subtopology, Map<String, Boolean> stateful,
                       Map<String, String> processOf) {
    }

    /**
     * Translate the coordinator's view of a Streams group into a kassign/v1 Streams instance.
     *
     * @param spec     the group
     * @param topology the topology
     * @return the translation
     */
    static Translation translate(GroupSpec spec, TopologyDescriber topology) {
        List<String> subs = topology.subtopologies();
        boolean numeric = true;
        Set<Integer> seen = new HashSet<>();
        for (String s : subs) {
            try {
                int n = Integer.parseInt(s);
                numeric &= n >= 0 && Integer.toString(n).equals(s) && seen.add(n);
            } catch (NumberFormatException e) {
                numeric = false;
            }
        }
        Map<Integer, String> toKafka = new TreeMap<>();
        Map<String, Integer> toKassign = new HashMap<>();
        for (int i = 0; i < subs.size(); i++) {
            int k = numeric ? Integer.parseInt(subs.get(i)) : i;
            toKafka.put(k, subs.get(i));
            toKassign.put(subs.get(i), k);
        }
        Map<String, Boolean> stateful = new LinkedHashMap<>();
        List<Object> tasks = new ArrayList<>();
        for (Map.Entry<Integer, String> e : toKafka.entrySet()) {
            int partitions;
            try {
                partitions = topology.maxNumInputPartitions(e.getValue());
            } catch (IllegalStateException ex) {
                partitions = 0; // a subtopology without source topics has no tasks
            }
            boolean isStateful = topology.isStateful(e.getValue());
            for (int p = 0; p < partitions; p++) {
                String id = e.getKey() + "_" + p;
                stateful.put(id, isStateful);
                Map<String, Object> task = new LinkedHashMap<>();
                task.put("id", id);
                task.put("stateful", isStateful);
                tasks.add(task);
            }
        }
        // Processes in the order their first member appears; members in group order.
        Map<String, List<String>> processes = new LinkedHashMap<>();
        Map<String, String> processOf = new LinkedHashMap<>();
        for (String memberId : spec.memberIds()) {
            String process = spec.memberMetadata(memberId).processId();
            processes.computeIfAbsent(process, k -> new ArrayList<>()).add(memberId);
            processOf.put(memberId, process);
        }
        List<Object> clients = new ArrayList<>();
        for (Map.Entry<String, List<String>> p : processes.entrySet()) {
            Set<String> held = new HashSet<>(); // a process holds a task once (actives first)
            Set<String> activeHere = new HashSet<>();
            Map<String, List<String>> actives = new HashMap<>();
            for (String memberId : p.getValue()) {
                List<String> mine = new ArrayList<>();
                for (String t : taskIds(spec.memberAssignmentState(memberId).activeTasks(), toKassign)) {
                    if (stateful.containsKey(t) && held.add(t)) {
                        mine.add(t);
                        activeHere.add(t);
                    }
                }
                actives.put(memberId, mine);
            }
            Map<String, Object> lags = new TreeMap<>(KassignStreamsTaskAssignor::compareTasks);
            List<Object> members = new ArrayList<>();
            String rack = null;
            for (String memberId : p.getValue()) {
                MemberAssignmentMetadata meta = spec.memberMetadata(memberId);
                MemberAssignmentState state = spec.memberAssignmentState(memberId);
                if (rack == null && meta.rackId().isPresent()) {
                    rack = meta.rackId().get();
                }
                List<String> standby = new ArrayList<>();
                Set<String> others = new TreeSet<>(KassignStreamsTaskAssignor::compareTasks);
                others.addAll(taskIds(state.standbyTasks(), toKassign));
                others.addAll(taskIds(state.warmupTasks(), toKassign));
                for (String t : others) {
                    if (Boolean.TRUE.equals(stateful.get(t)) && held.add(t)) {
                        standby.add(t);
                    }
                }
                Map<String, Object> offsets = new TreeMap<>(KassignStreamsTaskAssignor::compareTasks);
                Map<String, Long> ends = offsetsById(state.taskEndOffsets(), toKassign);
                offsetsById(state.taskOffsets(), toKassign).forEach((t, offset) -> {
                    if (!Boolean.TRUE.equals(stateful.get(t))) {
                        return;
                    }
                    offsets.put(t, offset);
                    if (activeHere.contains(t)) {
                        return;
                    }
                    Long end = ends.get(t);
                    Long lag = end == null || offset < 0 ? null : Math.max(0L, end - offset);
                    Object before = lags.get(t);
                    if (!lags.containsKey(t) || (lag != null && (before == null || lag < (Long) before))) {
                        lags.put(t, lag);
                    }
                });
                Map<String, Object> member = new LinkedHashMap<>();
                member.put("id", memberId);
                member.put("active", sorted(actives.get(memberId)));
                member.put("standby", standby);
                if (!offsets.isEmpty()) {
                    member.put("task_offsets", offsets);
                }
                members.add(member);
            }
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("id", p.getKey());
            c.put("process_id", processUuid(p.getKey()));
            if (rack != null) {
                c.put("rack", rack);
            }
            if (!lags.isEmpty()) {
                c.put("lags", lags);
            }
            c.put("members", members);
            clients.add(c);
        }
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("num_standby_replicas", spec.configs().numStandbyReplicas());
        // KIP-1071: the assignor computes the target assignment and the coordinator stages the moves (4.4's
        // AssignmentRefiner, warm-ups); an assignor can give neither warm-ups nor a probing rebalance, so the
        // optimum must not keep actives on caught-up processes only (a joining instance would get none).
        config.put("active_on_caught_up", false);
        Map<String, Object> instance = new LinkedHashMap<>();
        instance.put("format", "kassign/v1");
        instance.put("protocol", "streams");
        instance.put("tasks", tasks);
        instance.put("clients", clients);
        instance.put("config", config);
        return new Translation(instance, toKafka, stateful, processOf);
    }

    private static List<String> sorted(List<String> tasks) {
        List<String> out = new ArrayList<>(tasks);
        out.sort(KassignStreamsTaskAssignor::compareTasks);
        return out;
    }

    /** Order task ids {@code S_P} by subtopology, then partition (numerically). */
    static int compareTasks(String a, String b) {
        int[] x = parseTask(a);
        int[] y = parseTask(b);
        if (x == null || y == null) {
            return a.compareTo(b);
        }
        return x[0] != y[0] ? Integer.compare(x[0], y[0]) : Integer.compare(x[1], y[1]);
    }

    private static int[] parseTask(String id) {
        int u = id.indexOf('_');
        if (u < 0) {
            return null;
        }
        try {
            return new int[] {Integer.parseInt(id.substring(0, u)), Integer.parseInt(id.substring(u + 1))};
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static List<String> taskIds(Map<String, Set<Integer>> tasks, Map<String, Integer> toKassign) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Set<Integer>> e : tasks.entrySet()) {
            Integer s = toKassign.get(e.getKey());
            if (s == null) {
                continue; // a subtopology no longer in the topology
            }
            for (int p : new TreeSet<>(e.getValue())) {
                out.add(s + "_" + p);
            }
        }
        out.sort(KassignStreamsTaskAssignor::compareTasks);
        return out;
    }

    private static Map<String, Long> offsetsById(Map<String, Map<Integer, Long>> offsets,
                                                 Map<String, Integer> toKassign) {
        Map<String, Long> out = new TreeMap<>(KassignStreamsTaskAssignor::compareTasks);
        for (Map.Entry<String, Map<Integer, Long>> e : offsets.entrySet()) {
            Integer s = toKassign.get(e.getKey());
            if (s == null) {
                continue;
            }
            e.getValue().forEach((p, o) -> {
                if (o != null) {
                    out.put(s + "_" + p, o);
                }
            });
        }
        return out;
    }

    /** Kafka Streams' process ids are UUIDs; any other string is mapped to a name-based UUID. */
    static String processUuid(String processId) {
        try {
            return UUID.fromString(processId).toString();
        } catch (IllegalArgumentException e) {
            return UUID.nameUUIDFromBytes(processId.getBytes(StandardCharsets.UTF_8)).toString();
        }
    }

    /**
     * Check the service's answer and read it as Kafka's assignment.
     *
     * @param answer the service's JSON object
     * @param t      the translation it answers
     * @return the group assignment (every member, also with nothing)
     * @throws KassignException naming the first problem
     */
    static GroupAssignment read(Map<?, ?> answer, Translation t) throws KassignException {
        if (!(answer.get("members") instanceof Map<?, ?> members)) {
            throw ConsumerAnswer.invalid("no per-member \"members\" object");
        }
        Map<String, String> activeOn = new HashMap<>(); // task -> member
        Map<String, Map<String, String>> onProcess = new HashMap<>(); // process -> task -> member
        Map<String, Map<String, Set<Integer>>> active = new HashMap<>();
        Map<String, Map<String, Set<Integer>>> standby = new HashMap<>();
        for (String m : t.processOf().keySet()) {
            active.put(m, new HashMap<>());
            standby.put(m, new HashMap<>());
        }
        // Actives first, so a standby beside its active is found whatever the member order.
        for (String kind : List.of("active", "standby", "warmup")) {
            for (Map.Entry<?, ?> e : members.entrySet()) {
                String member = String.valueOf(e.getKey());
                String process = t.processOf().get(member);
                if (process == null) {
                    throw ConsumerAnswer.invalid("member '" + member + "' is not in the group");
                }
                if (!(e.getValue() instanceof Map<?, ?> lists)) {
                    throw ConsumerAnswer.invalid("members." + member + " is not an object");
                }
                Object list = lists.get(kind);
                if (list == null) {
                    continue;
                }
                if (!(list instanceof List<?> ids)) {
                    throw ConsumerAnswer.invalid("members." + member + "." + kind + " is not an array");
                }
                for (Object o : ids) {
                    String task = String.valueOf(o);
                    Boolean isStateful = t.stateful().get(task);
                    if (!(o instanceof String) || isStateful == null) {
                        throw ConsumerAnswer.invalid("task " + o + " (members." + member + "." + kind
                            + ") is not a task of the topology");
                    }
                    if (kind.equals("active")) {
                        String before = activeOn.putIfAbsent(task, member);
                        if (before != null) {
                            throw ConsumerAnswer.invalid("task " + task + " is active twice (members '" + before
                                + "' and '" + member + "')");
                        }
                    } else if (!isStateful) {
                        throw ConsumerAnswer.invalid("stateless task " + task + " given as " + kind + " to '"
                            + member + "'");
                    }
                    String other = onProcess.computeIfAbsent(process, k -> new HashMap<>()).putIfAbsent(task, member);
                    if (other != null) {
                        throw ConsumerAnswer.invalid("task " + task + " is twice on process " + process + " ("
                            + (other.equals(member) ? "member '" + member + "'" : "members '" + other + "' and '"
                            + member + "'") + ", " + kind + ")");
                    }
                    int u = task.indexOf('_');
                    String sub = t.subtopology().get(Integer.parseInt(task.substring(0, u)));
                    int partition = Integer.parseInt(task.substring(u + 1));
                    (kind.equals("active") ? active : standby).get(member)
                        .computeIfAbsent(sub, k -> new HashSet<>()).add(partition);
                }
            }
        }
        for (String task : t.stateful().keySet()) {
            if (!activeOn.containsKey(task)) {
                throw ConsumerAnswer.invalid("task " + task + " has no active member");
            }
        }
        Map<String, MemberAssignment> out = new HashMap<>();
        for (String m : t.processOf().keySet()) {
            out.put(m, new MemberAssignment(freeze(active.get(m)), freeze(standby.get(m))));
        }
        return new GroupAssignment(out);
    }

    private static Map<String, Set<Integer>> freeze(Map<String, Set<Integer>> tasks) {
        Map<String, Set<Integer>> out = new HashMap<>();
        tasks.forEach((k, v) -> out.put(k, Set.copyOf(v)));
        return Map.copyOf(out);
    }

    @Override
    public GroupAssignment assign(GroupSpec spec, TopologyDescriber topology) throws TaskAssignorException {
        long start = System.nanoTime();
        KassignClient c = client;
        if (c == null) {
            c = new KassignClient(KassignConfig.from(null));
            client = c;
        }
        String reason;
        try {
            Translation t = translate(spec, topology);
            // The service's own fallback must be the coordinator's sticky assignor: it answers per member
            // ("members"), as this plug-in needs; the service's default for streams, Kafka Streams'
            // high-availability, answers per client only (found on a real broker: a service cut at its
            // deadline then made every assignment fall back here).
            Map<?, ?> answer = c.assign(t.instance(), "optimal-streams", "streams-server-sticky", start);
            GroupAssignment result = read(answer, t);
            String status = KassignClient.status(answer);
            long ms = KassignClient.elapsedMs(start);
            lastOutcome = new Outcome(false, null, status, ms);
            LOG.info("kassign assigned {} tasks to {} members in {} ms (status {}{})", t.stateful().size(),
                t.processOf().size(), ms, status, KassignClient.serviceFallback(answer));
            return result;
        } catch (KassignException e) {
            reason = e.getMessage();
        } catch (RuntimeException e) {
            reason = "internal error: " + e;
        }
        GroupAssignment result = fallback.assign(spec, topology);
        lastOutcome = new Outcome(true, reason, null, KassignClient.elapsedMs(start));
        LOG.warn("kassign: falling back to Kafka's '{}' task assignor for a streams group of {} members: {}",
            fallback.name(), spec.memberIds().size(), reason);
        return result;
    }
}
