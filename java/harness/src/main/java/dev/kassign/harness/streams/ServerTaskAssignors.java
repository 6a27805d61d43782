package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;
import dev.kassign.harness.Json;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * {@code streams-server-sticky}: the group coordinator's Streams task assignor of the KIP-1071 rebalance
 * protocol, {@code org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor}, given what the
 * coordinator gives it.
 *
 * <ul>
 *   <li>Kafka 4.4 and later: through the KIP-1357 public API of {@code kafka-group-coordinator-api}
 *       ({@code org.apache.kafka.coordinator.group.api.streams.assignor}; {@link ServerRun44}). Each member's
 *       tasks are the ones it currently owns ({@code current_active} / {@code current_standby}, falling back
 *       to {@code active} / {@code standby}) and its reported {@code task_offsets} (KAFKA-20790, KAFKA-20719).</li>
 *   <li>Kafka 4.1 to 4.3: the coordinator-internal API of those releases ({@code GroupSpec},
 *       {@code AssignmentMemberSpec}, {@code TopologyDescriber} in the assignor's own package), which the
 *       harness (compiled against 4.4) reaches by reflection. Each member's tasks are its previous target
 *       ({@code active} / {@code standby}); no offsets, as the 4.3 coordinator passes none. Kafka 4.1's class
 *       is the early-access assignor; kassign models the one of 4.2.0 and later.</li>
 *   <li>Older releases have no Streams group coordinator: the answer is an error naming the release.</li>
 * </ul>
 *
 * <p>Members go into a {@code HashMap<String, ...>} keyed by member id, filled in the order of {@code clients}
 * and, within a client, of {@code members}; the topology lists the sub-topology ids (the text before
 * {@code _}) in String order, each with its partition count (largest partition + 1) and whether it is
 * stateful. Answer: {@code {"assignment": {client: {"active", "standby"}}, "members": {member: {"active",
 * "standby"}}, "probing_rebalance": false}}, lists in {@code TaskId} order.
 */
public final class ServerTaskAssignors implements Handler {
    static final String API44 = "org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignor";
    static final String PKG = "org.apache.kafka.coordinator.group.streams.assignor.";

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        StreamsInstance inst;
        if (StreamsInstance.hasClass(API44) && StreamsInstance.hasClass(PKG + "StickyTaskAssignor")) {
            inst = StreamsInstance.of(request);
            return answer(inst, ServerRun44.run(inst, topology(inst)));
        }
        if (StreamsInstance.hasClass(PKG + "AssignmentMemberSpec") && StreamsInstance.hasClass(PKG + "StickyTaskAssignor")) {
            inst = StreamsInstance.of(request);
            return answer(inst, runReflective(inst, topology(inst)));
        }
        throw new UnsupportedOperationException("Kafka " + StreamsInstance.kafkaVersion()
            + " has no Streams group coordinator task assignor (KIP-1071; Kafka 4.2.0 and later)");
    }

    /** Sub-topology id -> {partition count, stateful (1/0)}, in String order of the ids. */
    static TreeMap<String, int[]> topology(StreamsInstance inst) {
        TreeMap<String, int[]> out = new TreeMap<>();
        for (StreamsInstance.Task t : inst.tasks) {
            int[] v = out.computeIfAbsent(String.valueOf(t.subtopology()), k -> new int[] {0, 0});
            v[0] = Math.max(v[0], t.partition() + 1);
            if (t.stateful()) {
                v[1] = 1;
            }
        }
        return out;
    }

    /** {@code "<sub>_<p>"} task ids grouped as {@code sub -> partitions}, into a fresh map of sets. */
    static Map<String, Set<Integer>> compact(List<String> tasks) {
        Map<String, Set<Integer>> out = new HashMap<>();
        for (String t : tasks) {
            int[] sp = StreamsInstance.parseTaskId(t, "instance.clients[].members[]");
            out.computeIfAbsent(String.valueOf(sp[0]), k -> new HashSet<>()).add(sp[1]);
        }
        return out;
    }

    /** Per member: {active task ids, standby task ids}. */
    private static ObjectNode answer(StreamsInstance inst, Map<String, List<List<String>>> byMember) {
        // Per client id, the union of its members' tasks (clients that share an id are merged).
        Map<String, List<List<String>>> byClient = new java.util.LinkedHashMap<>();
        ObjectNode members = Json.object();
        for (StreamsInstance.Client c : inst.clients) {
            List<List<String>> union = byClient.computeIfAbsent(c.id(), k -> List.of(new ArrayList<>(), new ArrayList<>()));
            for (StreamsInstance.Member m : members(c)) {
                List<List<String>> got = byMember.getOrDefault(m.id(), List.of(List.of(), List.of()));
                members.set(m.id(), StreamsInstance.activeStandby(got.get(0), got.get(1)));
                union.get(0).addAll(got.get(0));
                union.get(1).addAll(got.get(1));
            }
        }
        ObjectNode assignment = Json.object();
        byClient.forEach((id, union) -> assignment.set(id, StreamsInstance.activeStandby(union.get(0), union.get(1))));
        // Members in member-id order, as in kassign's fixtures.
        ObjectNode sortedMembers = Json.object();
        new TreeMap<String, JsonNode>(toMap(members)).forEach(sortedMembers::set);
        ObjectNode out = Json.object();
        out.set("assignment", assignment);
        out.set("members", sortedMembers);
        out.put("probing_rebalance", false);
        return out;
    }

    private static Map<String, JsonNode> toMap(ObjectNode o) {
        Map<String, JsonNode> m = new HashMap<>();
        o.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue()));
        return m;
    }

    /** A client's members; a client without {@code members} is one member named after the client. */
    static List<StreamsInstance.Member> members(StreamsInstance.Client c) {
        if (c.members() != null) {
            return c.members();
        }
        throw new IllegalArgumentException("instance.clients[" + c.id() + "].members: the KIP-1071 assignor "
            + "assigns tasks to group members; give each process its members");
    }

    /** Task ids of a {@code subtopology -> partitions} map. */
    static List<String> expand(Map<String, Set<Integer>> tasks) {
        List<String> out = new ArrayList<>();
        tasks.forEach((sub, parts) -> parts.forEach(p -> out.add(sub + "_" + p)));
        return out;
    }

    /** Kafka 4.1-4.3: the same assignor behind the coordinator-internal API, by reflection. */
    private static Map<String, List<List<String>>> runReflective(StreamsInstance inst, TreeMap<String, int[]> topo)
            throws Exception {
        ClassLoader cl = ServerTaskAssignors.class.getClassLoader();
        Class<?> memberSpec = Class.forName(PKG + "AssignmentMemberSpec", true, cl);
        Class<?> groupSpec = Class.forName(PKG + "GroupSpec", true, cl);
        Class<?> groupSpecImpl = Class.forName(PKG + "GroupSpecImpl", true, cl);
        Class<?> describer = Class.forName(PKG + "TopologyDescriber", true, cl);
        Class<?> assignorClass = Class.forName(PKG + "StickyTaskAssignor", true, cl);
        Constructor<?> newMember = memberSpec.getConstructor(Optional.class, Optional.class, Map.class, Map.class,
            Map.class, String.class, Map.class, Map.class, Map.class);
        Map<String, Object> members = new HashMap<>();
        for (StreamsInstance.Client c : inst.clients) {
            for (StreamsInstance.Member m : members(c)) {
                Object spec = newMember.newInstance(Optional.empty(), StreamsInstance.rack(c), compact(m.active()),
                    compact(m.standby()), Map.of(), c.processId(), c.clientTags(), Map.of(), Map.of());
                if (members.put(m.id(), spec) != null) {
                    throw new IllegalArgumentException("instance.clients[].members: duplicate member id " + m.id());
                }
            }
        }
        Object spec = groupSpecImpl.getConstructor(Map.class, Map.class)
            .newInstance(members, Map.of("num.standby.replicas", String.valueOf(inst.numStandbyReplicas)));
        Object topology = Proxy.newProxyInstance(cl, new Class<?>[] {describer}, (proxy, method, args) -> {
            switch (method.getName()) {
                case "subtopologies":
                    return new ArrayList<>(topo.keySet());
                case "maxNumInputPartitions":
                    return subtopology(topo, (String) args[0])[0];
                case "isStateful":
                    return subtopology(topo, (String) args[0])[1] == 1;
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                case "toString":
                    return "TopologyDescriber" + topo.keySet();
                default:
                    throw new UnsupportedOperationException(method.getName());
            }
        });
        Object assignor = assignorClass.getConstructor().newInstance();
        Method assign = assignorClass.getMethod("assign", groupSpec, describer);
        Object result;
        try {
            result = assign.invoke(assignor, spec, topology);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> got = (Map<String, Object>) result.getClass().getMethod("members").invoke(result);
        Map<String, List<List<String>>> out = new HashMap<>();
        for (Map.Entry<String, Object> e : got.entrySet()) {
            Object a = e.getValue();
            @SuppressWarnings("unchecked")
            Map<String, Set<Integer>> active = (Map<String, Set<Integer>>) a.getClass().getMethod("activeTasks").invoke(a);
            @SuppressWarnings("unchecked")
            Map<String, Set<Integer>> standby = (Map<String, Set<Integer>>) a.getClass().getMethod("standbyTasks").invoke(a);
            out.put(e.getKey(), List.of(expand(active), expand(standby)));
        }
        return out;
    }

    static int[] subtopology(TreeMap<String, int[]> topo, String id) {
        int[] v = topo.get(id);
        if (v == null) {
            throw new NoSuchElementException("subtopology " + id);
        }
        return v;
    }
}
