package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;
import dev.kassign.harness.Json;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.streams.processor.TaskId;

/**
 * {@code subscription-info}: Kafka Streams' {@code SubscriptionInfo}, the consumer-protocol user data of a
 * Streams member (versions 1-11, as far as the release on the classpath supports them), with Kafka's own
 * encoder and decoder. Field names and meaning are those of kassign's fixture
 * {@code scenarios/kafka/subscription-info.jsonl.gz} and of {@code solver.streams.subscription_info.streams_fields}.
 *
 * <ul>
 *   <li>{@code {"op": "encode", "decoded": {...}}} -> {@code {"bytes_b64", "bytes"}} (hex): Kafka's
 *       {@code new SubscriptionInfo(version, latestSupportedVersion, processId, userEndPoint, taskOffsetSums,
 *       uniqueField, errorCode, clientTags).encode()}. The offset-sum and client-tag maps are handed over in the
 *       order listed (v1-6: {@code prev_tasks} at -2, then {@code standby_tasks} at -3, unless only
 *       {@code task_offset_sums} is given); Kafka's encoder then orders the wire as it does in a client.</li>
 *   <li>{@code {"op": "decode", "bytes_b64" | "bytes": ...}} -> {@code {"decoded": {...}}}: Kafka's
 *       {@code SubscriptionInfo.decode}; lists in wire order where the field is on the wire, Kafka's derived
 *       sets sorted in {@code TaskId} order otherwise.</li>
 * </ul>
 *
 * <p>All through reflection: the constructor's process id is a {@code UUID} before Kafka 3.8 and a
 * {@code ProcessId} from 3.8, and releases before 3.2 have no client tags.
 */
public final class SubscriptionInfoCodec implements Handler {
    private static final String CLASS = "org.apache.kafka.streams.processor.internals.assignment.SubscriptionInfo";
    private static final long LATEST_OFFSET = -2L;
    private static final long UNKNOWN_OFFSET_SUM = -3L;

    /** Kafka's {@code TaskId} order; tasks without a named topology first (Kafka refuses to compare the two). */
    static final Comparator<TaskId> ORDER = Comparator
        .<TaskId, Boolean>comparing(t -> t.topologyName() != null)
        .thenComparing(t -> t.topologyName() == null ? "" : t.topologyName())
        .thenComparingInt(TaskId::subtopology)
        .thenComparingInt(TaskId::partition);

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        JsonNode options = Json.required(request, "options", "request");
        String op = Json.required(options, "op", "request.options").asText();
        try {
            switch (op) {
                case "encode":
                    return encode(Json.required(options, "decoded", "request.options"));
                case "decode":
                    return decode(bytes(options));
                default:
                    throw new IllegalArgumentException("request.options.op: '" + op + "' is not encode or decode");
            }
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    private static byte[] bytes(JsonNode options) {
        if (options.hasNonNull("bytes_b64")) {
            return Base64.getDecoder().decode(options.get("bytes_b64").asText());
        }
        return HexFormat.of().parseHex(Json.required(options, "bytes", "request.options").asText());
    }

    /** {@code "<sub>_<p>"} or {@code "<name>__<sub>_<p>"} (named topology). */
    static TaskId taskId(String id) {
        int cut = id.lastIndexOf("__");
        String name = cut < 0 ? null : id.substring(0, cut);
        String rest = cut < 0 ? id : id.substring(cut + 2);
        int u = rest.lastIndexOf('_');
        try {
            int sub = Integer.parseInt(rest.substring(0, u));
            int part = Integer.parseInt(rest.substring(u + 1));
            return name == null ? new TaskId(sub, part) : new TaskId(sub, part, name);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("'" + id + "' is not a task id \"[<topology>__]<subtopology>_<partition>\"");
        }
    }

    private static ObjectNode encode(JsonNode d) throws Exception {
        int version = (int) Json.integer(d, "version", -1);
        int latest = (int) Json.integer(d, "latest_supported_version", -1);
        UUID processId = UUID.fromString(Json.required(d, "process_id", "request.options.decoded").asText());
        String endpoint = Json.text(d, "user_endpoint", null);
        Map<TaskId, Long> sums = new LinkedHashMap<>();
        boolean lists = d.hasNonNull("prev_tasks") || d.hasNonNull("standby_tasks");
        if (version <= 6 && lists) {
            Json.textList(d, "prev_tasks").forEach(t -> sums.put(taskId(t), LATEST_OFFSET));
            Json.textList(d, "standby_tasks").forEach(t -> sums.putIfAbsent(taskId(t), UNKNOWN_OFFSET_SUM));
        } else {
            for (Map.Entry<String, JsonNode> e : Json.entries(d, "task_offset_sums")) {
                sums.put(taskId(e.getKey()), e.getValue().asLong());
            }
        }
        byte unique = (byte) Json.integer(d, "unique_field", 0);
        int errorCode = (int) Json.integer(d, "error_code", 0);
        Map<String, String> tags = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : Json.entries(d, "client_tags")) {
            tags.put(e.getKey(), e.getValue().asText());
        }
        Class<?> cls = Class.forName(CLASS);
        Object info = null;
        for (Constructor<?> c : cls.getConstructors()) {
            Class<?>[] p = c.getParameterTypes();
            if (p.length < 7 || p[0] != int.class || p[4] != Map.class) {
                continue;
            }
            Object pid = p[2] == UUID.class ? processId
                : p[2].getConstructor(UUID.class).newInstance(processId);
            if (p.length == 8) {
                info = c.newInstance(version, latest, pid, endpoint, sums, unique, errorCode, tags);
            } else if (p.length == 7) {
                if (!tags.isEmpty()) {
                    throw new UnsupportedOperationException("Kafka " + StreamsInstance.kafkaVersion()
                        + "'s SubscriptionInfo has no client tags (version 11, Kafka 3.2.0 and later)");
                }
                info = c.newInstance(version, latest, pid, endpoint, sums, unique, errorCode);
            }
        }
        if (info == null) {
            throw new UnsupportedOperationException("no SubscriptionInfo constructor known to the harness in Kafka "
                + StreamsInstance.kafkaVersion());
        }
        ByteBuffer buf = (ByteBuffer) cls.getMethod("encode").invoke(info);
        byte[] out = new byte[buf.remaining()];
        buf.get(out);
        ObjectNode o = Json.object();
        o.put("bytes_b64", Base64.getEncoder().encodeToString(out));
        o.put("bytes", HexFormat.of().formatHex(out));
        return o;
    }

    private static Object call(Object target, String method) throws ReflectiveOperationException {
        java.lang.reflect.Method m = target.getClass().getMethod(method);
        m.setAccessible(true);
        return m.invoke(target);
    }

    private static ObjectNode decode(byte[] bytes) throws Exception {
        Class<?> cls = Class.forName(CLASS);
        Object info = cls.getMethod("decode", ByteBuffer.class).invoke(null, ByteBuffer.wrap(bytes));
        Field dataField = cls.getDeclaredField("data");
        dataField.setAccessible(true);
        Object data = dataField.get(info);
        int version = (int) call(info, "version");
        ObjectNode d = Json.object();
        d.put("version", version);
        d.put("latest_supported_version", (int) call(info, "latestSupportedVersion"));
        Object uuid = call(data, "processId");
        d.put("process_id", new UUID((long) call(uuid, "getMostSignificantBits"),
            (long) call(uuid, "getLeastSignificantBits")).toString());
        @SuppressWarnings("unchecked")
        Map<TaskId, Long> derived = (Map<TaskId, Long>) call(info, "taskOffsetSums");
        Map<String, Long> sums = new LinkedHashMap<>();
        if (version <= 6) {
            d.set("prev_tasks", Json.strings(wireTasks((List<?>) call(data, "prevTasks"))));
            d.set("standby_tasks", Json.strings(wireTasks((List<?>) call(data, "standbyTasks"))));
            List<TaskId> sorted = new ArrayList<>(derived.keySet());
            sorted.sort(ORDER);
            sorted.forEach(t -> sums.put(name(t), derived.get(t)));
        } else {
            for (Object tos : (List<?>) call(data, "taskOffsetSums")) {
                int sub = (int) call(tos, "topicGroupId");
                if (version <= 9) {
                    for (Object pos : (List<?>) call(tos, "partitionToOffsetSum")) {
                        sums.put(name(new TaskId(sub, (int) call(pos, "partition"))), (long) call(pos, "offsetSum"));
                    }
                } else {
                    String name = (String) call(tos, "namedTopology");
                    int part = (int) call(tos, "partition");
                    TaskId t = name == null ? new TaskId(sub, part) : new TaskId(sub, part, name);
                    sums.put(name(t), (long) call(tos, "offsetSum"));
                }
            }
            d.set("prev_tasks", Json.strings(sortedNames(derivedSet(info, "prevTasks"))));
            d.set("standby_tasks", Json.strings(sortedNames(derivedSet(info, "standbyTasks"))));
        }
        ObjectNode sumsNode = d.putObject("task_offset_sums");
        sums.forEach(sumsNode::put);
        String endpoint = (String) call(info, "userEndPoint");
        if (endpoint == null || endpoint.isEmpty()) {
            d.putNull("user_endpoint");
        } else {
            d.put("user_endpoint", endpoint);
        }
        d.put("unique_field", version >= 8 ? (byte) call(data, "uniqueField") : 0);
        d.put("error_code", version >= 9 ? (int) call(data, "errorCode") : 0);
        ObjectNode tags = d.putObject("client_tags");
        if (version >= 11 && hasMethod(data, "clientTags")) {
            // (a release without client tags, before 3.2, reads none)
            for (Object tag : (List<?>) call(data, "clientTags")) {
                tags.put(new String((byte[]) call(tag, "key"), StandardCharsets.UTF_8),
                    new String((byte[]) call(tag, "value"), StandardCharsets.UTF_8));
            }
        }
        ObjectNode out = Json.object();
        out.set("decoded", d);
        return out;
    }

    private static boolean hasMethod(Object target, String method) {
        try {
            target.getClass().getMethod(method);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /**
     * kassign's task id text: {@code "<sub>_<p>"}, or {@code "<name>__<sub>_<p>"} for a named topology (Kafka's
     * {@code TaskId.toString()} in Kafka 4; Kafka 3.0.2 joins the name with a single underscore).
     */
    static String name(TaskId t) {
        String base = t.subtopology() + "_" + t.partition();
        return t.topologyName() == null ? base : t.topologyName() + "__" + base;
    }

    @SuppressWarnings("unchecked")
    private static Set<TaskId> derivedSet(Object info, String method) throws ReflectiveOperationException {
        return (Set<TaskId>) call(info, method);
    }

    private static List<String> wireTasks(List<?> wire) throws ReflectiveOperationException {
        List<String> out = new ArrayList<>();
        for (Object t : wire) {
            out.add(name(new TaskId((int) call(t, "topicGroupId"), (int) call(t, "partition"))));
        }
        return out;
    }

    private static List<String> sortedNames(Set<TaskId> tasks) {
        List<TaskId> sorted = new ArrayList<>(tasks);
        sorted.sort(ORDER);
        List<String> out = new ArrayList<>();
        sorted.forEach(t -> out.add(name(t)));
        return out;
    }
}
