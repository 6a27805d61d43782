package dev.kassign.harness.consumer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;
import dev.kassign.harness.Json;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka's consumer-protocol codec ({@code ConsumerProtocol}): subscriptions and assignments, encoded at a
 * given version and decoded, so kassign's codec can be compared with Kafka's byte for byte.
 */
public final class ConsumerProtocolCodec implements Handler {
    private static final HexFormat HEX = HexFormat.of();

    private static List<TopicPartition> partitions(JsonNode byTopic) {
        List<TopicPartition> out = new ArrayList<>();
        if (byTopic != null && byTopic.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = byTopic.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                e.getValue().forEach(p -> out.add(new TopicPartition(e.getKey(), p.asInt())));
            }
        }
        return out;
    }

    /** Partitions grouped by topic in the order they come (the wire order). */
    private static ObjectNode byTopic(List<TopicPartition> tps) {
        Map<String, List<Integer>> grouped = new LinkedHashMap<>();
        for (TopicPartition tp : tps) {
            grouped.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        }
        ObjectNode out = Json.object();
        grouped.forEach((t, ps) -> {
            com.fasterxml.jackson.databind.node.ArrayNode a = out.putArray(t);
            ps.forEach(a::add);
        });
        return out;
    }

    private static ByteBuffer userData(JsonNode node) {
        String hex = Json.text(node, "user_data", null);
        return hex == null ? null : ByteBuffer.wrap(HEX.parseHex(hex));
    }

    private static String hex(ByteBuffer buf) {
        ByteBuffer b = buf.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return HEX.formatHex(bytes);
    }

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        JsonNode opts = Json.required(request, "options", "request");
        String op = Json.required(opts, "op", "options").asText();
        boolean assignment = "assignment".equals(Json.text(opts, "kind", "subscription"));
        ObjectNode out = Json.object();
        if (op.equals("encode")) {
            short version = (short) Json.required(opts, "version", "options").asInt();
            ByteBuffer bytes;
            if (assignment) {
                JsonNode a = Json.required(opts, "assignment", "options");
                bytes = ConsumerProtocol.serializeAssignment(new Assignment(partitions(a.get("partitions")),
                    userData(a)), version);
            } else {
                JsonNode s = Json.required(opts, "subscription", "options");
                List<String> topics = Json.textList(s, "topics");
                Subscription sub = ClassicAssignors.subscription(topics, userData(s), partitions(s.get("owned")),
                    (int) Json.integer(s, "generation", -1), Json.text(s, "rack", null));
                bytes = ConsumerProtocol.serializeSubscription(sub, version);
            }
            out.put("bytes", hex(bytes));
            return out;
        }
        if (!op.equals("decode")) {
            throw new IllegalArgumentException("options.op: encode or decode, not " + op);
        }
        ByteBuffer buf = ByteBuffer.wrap(HEX.parseHex(Json.required(opts, "bytes", "options").asText()));
        out.put("version", ConsumerProtocol.deserializeVersion(buf.duplicate()));
        if (assignment) {
            Assignment a = ConsumerProtocol.deserializeAssignment(buf);
            ObjectNode o = out.putObject("assignment");
            o.set("partitions", byTopic(a.partitions()));
            if (a.userData() == null) {
                o.putNull("user_data");
            } else {
                o.put("user_data", hex(a.userData()));
            }
            return out;
        }
        Subscription s = ConsumerProtocol.deserializeSubscription(buf);
        ObjectNode o = out.putObject("subscription");
        o.set("topics", Json.strings(s.topics()));
        if (s.userData() == null) {
            o.putNull("user_data");
        } else {
            o.put("user_data", hex(s.userData()));
        }
        o.set("owned", byTopic(s.ownedPartitions()));
        o.put("generation", generation(s));
        String rack = rack(s);
        if (rack == null) {
            o.putNull("rack");
        } else {
            o.put("rack", rack);
        }
        return out;
    }

    /** The subscription's generation where the release has the field (3.4+), else -1. */
    private static int generation(Subscription s) {
        try {
            Object g = Subscription.class.getMethod("generationId").invoke(s);
            if (g instanceof java.util.Optional<?> o) {
                return o.isPresent() ? (Integer) o.get() : -1;
            }
            return (Integer) g;
        } catch (ReflectiveOperationException e) {
            return -1;
        }
    }

    /** The subscription's rack where the release has the field (3.4+), else null. */
    private static String rack(Subscription s) {
        try {
            java.util.Optional<?> r = (java.util.Optional<?>) Subscription.class.getMethod("rackId").invoke(s);
            return (String) r.orElse(null);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }
}
