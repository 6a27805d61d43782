package dev.kassign.harness.consumer;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kassign.harness.Json;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A kassign consumer-group instance as the handlers read it: topics with partition counts, ids and
 * replica racks; members in document order with their subscription, {@code owned} (object key order
 * kept), generation, static id and rack.
 */
final class ConsumerInstance {
    /** One topic. */
    record Topic(String name, int partitions, String id, List<List<String>> racks) {
    }

    /** One member. */
    record Member(String id, List<String> topics, Map<String, List<Integer>> owned, boolean hasOwned,
                  int generation, String instanceId, String rack) {
    }

    final Map<String, Topic> topics = new LinkedHashMap<>();
    final List<Member> members = new ArrayList<>();

    ConsumerInstance(JsonNode instance) {
        for (Map.Entry<String, JsonNode> e : Json.entries(instance, "topics")) {
            JsonNode t = e.getValue();
            if (t.isNumber()) {
                topics.put(e.getKey(), new Topic(e.getKey(), t.asInt(), null, List.of()));
            } else {
                List<List<String>> racks = new ArrayList<>();
                JsonNode r = t.get("racks");
                if (r != null && r.isArray()) {
                    r.forEach(p -> {
                        List<String> rs = new ArrayList<>();
                        p.forEach(x -> rs.add(x.asText()));
                        racks.add(rs);
                    });
                }
                topics.put(e.getKey(), new Topic(e.getKey(), t.get("partitions").asInt(),
                    Json.text(t, "id", null), racks));
            }
        }
        JsonNode ms = instance.get("members");
        if (ms != null) {
            for (JsonNode m : ms) {
                Map<String, List<Integer>> owned = new LinkedHashMap<>();
                JsonNode o = m.get("owned");
                if (o != null && o.isObject()) {
                    for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
                        Map.Entry<String, JsonNode> e = it.next();
                        List<Integer> ps = new ArrayList<>();
                        e.getValue().forEach(p -> ps.add(p.asInt()));
                        owned.put(e.getKey(), ps);
                    }
                }
                members.add(new Member(m.get("id").asText(), Json.textList(m, "topics"), owned,
                    o != null && !o.isNull(), (int) Json.integer(m, "generation", -1),
                    Json.text(m, "instance_id", null), Json.text(m, "rack", null)));
            }
        }
    }
}
