package dev.kassign.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** JSON helpers shared by the handlers: one mapper, field access with clear errors. */
public final class Json {
    /** The harness's one mapper: object fields keep their order (kassign's owned order matters). */
    public static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    /** A new empty object. */
    public static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    /** A JSON array of the given integers, ascending. */
    public static ArrayNode sortedInts(Collection<Integer> values) {
        List<Integer> sorted = new ArrayList<>(values);
        sorted.sort(null);
        ArrayNode out = MAPPER.createArrayNode();
        sorted.forEach(out::add);
        return out;
    }

    /** A JSON array of the given strings, in the order given. */
    public static ArrayNode strings(Collection<String> values) {
        ArrayNode out = MAPPER.createArrayNode();
        values.forEach(out::add);
        return out;
    }

    /** The field's text, or {@code fallback} when it is absent or null. */
    public static String text(JsonNode node, String field, String fallback) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? fallback : v.asText();
    }

    /** The field's integer, or {@code fallback} when it is absent or null. */
    public static long integer(JsonNode node, String field, long fallback) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? fallback : v.asLong();
    }

    /** A required field, or an error naming it. */
    public static JsonNode required(JsonNode node, String field, String where) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException(where + "." + field + ": missing");
        }
        return v;
    }

    /** An array field's text elements in order (empty when absent). */
    public static List<String> textList(JsonNode node, String field) {
        List<String> out = new ArrayList<>();
        JsonNode v = node.get(field);
        if (v != null && !v.isNull()) {
            v.forEach(e -> out.add(e.asText()));
        }
        return out;
    }

    /** An object field's entries in document order (empty when absent). */
    public static List<Map.Entry<String, JsonNode>> entries(JsonNode node, String field) {
        List<Map.Entry<String, JsonNode>> out = new ArrayList<>();
        JsonNode v = node.get(field);
        if (v != null && v.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
                out.add(it.next());
            }
        }
        return out;
    }
}
