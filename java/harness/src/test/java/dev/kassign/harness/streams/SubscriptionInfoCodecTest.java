package dev.kassign.harness.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Json;
import org.junit.jupiter.api.Test;

/** Kafka's SubscriptionInfo bytes from kassign's fixture (scenarios/kafka/subscription-info.jsonl.gz). */
class SubscriptionInfoCodecTest {
    // sub207-streams-v2-0: version 2, prev and standby task lists on the wire, a non-ASCII endpoint.
    private static final String V2 = "AAAAAolJHXyOqUwcvFLopUkLuqgAAAAEAAAAAAAAAK8AAAABAAAAbwAAAAAAAAAdAAAAAQAAAAEAAAABAAAAAQAAAAUAAAAVaMO0dGUtOS5leGVtcGxlOjU2MDYw";
    private static final String V2_DECODED = """
        {"version": 2, "latest_supported_version": -1, "process_id": "89491d7c-8ea9-4c1c-bc52-e8a5490bbaa8",
         "prev_tasks": ["0_175", "1_111", "0_29", "1_1"], "standby_tasks": ["1_5"],
         "task_offset_sums": {"0_29": -2, "0_175": -2, "1_1": -2, "1_5": -3, "1_111": -2},
         "user_endpoint": "h\\u00f4te-9.exemple:56060", "unique_field": 0, "error_code": 0, "client_tags": {}}""";
    // sub207-streams-v11-0: a named topology and client tags in wire order.
    private static final String V11 = "AAAACwAAAAvE2lKc9BdBXICCvqmdG/KHAAAAC2hvc3QtOTY6NDQzAAAAAwAAAAAAAACqAABGlnfJw8gACGFwcC50b3BvAAAAAAAAABUAAAAAAAC84AAIYXBwLnRvcG8AAAAAAAAAAf/////////+AAhhcHAudG9wb2gAAAAAAAAAAwAAAAdjbHVzdGVyAAAABWs4cy0yAAAABHpvbmUAAAAHem9uZS3DvAAAAAJhegAAAAFi";
    private static final String V11_DECODED = """
        {"version": 11, "latest_supported_version": 11, "process_id": "c4da529c-f417-415c-8082-bea99d1bf287",
         "prev_tasks": ["app.topo__0_1"], "standby_tasks": ["app.topo__0_21", "app.topo__0_170"],
         "task_offset_sums": {"app.topo__0_170": 77612068750280, "app.topo__0_21": 48352, "app.topo__0_1": -2},
         "user_endpoint": "host-96:443", "unique_field": 104, "error_code": 0,
         "client_tags": {"cluster": "k8s-2", "zone": "zone-\\u00fc", "az": "b"}}""";

    private static JsonNode run(String op, String field, JsonNode value) throws Exception {
        ObjectNode r = Json.object();
        r.put("assignor", "subscription-info");
        ObjectNode options = r.putObject("options");
        options.put("op", op);
        options.set(field, value);
        return new SubscriptionInfoCodec().handle(r);
    }

    @Test
    void decodesWhatKafkaWrote() throws Exception {
        // Compared as text: the same fields in the same order (Jackson's int and long nodes never compare equal).
        assertEquals(text(Json.MAPPER.readTree(V2_DECODED)), text(run("decode", "bytes_b64", textNode(V2)).get("decoded")));
        assertEquals(text(Json.MAPPER.readTree(V11_DECODED)), text(run("decode", "bytes_b64", textNode(V11)).get("decoded")));
    }

    @Test
    void encodingTheDecodedFieldsGivesTheSameBytes() throws Exception {
        assertEquals(V2, run("encode", "decoded", Json.MAPPER.readTree(V2_DECODED)).get("bytes_b64").asText());
        assertEquals(V11, run("encode", "decoded", Json.MAPPER.readTree(V11_DECODED)).get("bytes_b64").asText());
    }

    @Test
    void theKeyOrderOfDecodedObjectsIsTheWireOrder() throws Exception {
        JsonNode d = run("decode", "bytes_b64", textNode(V11)).get("decoded");
        assertEquals("[\"cluster\",\"zone\",\"az\"]", Json.MAPPER.writeValueAsString(
            Json.MAPPER.valueToTree(iterator(d.get("client_tags")))));
        assertEquals("[\"app.topo__0_170\",\"app.topo__0_21\",\"app.topo__0_1\"]", Json.MAPPER.writeValueAsString(
            Json.MAPPER.valueToTree(iterator(d.get("task_offset_sums")))));
    }

    private static JsonNode textNode(String s) {
        return Json.MAPPER.getNodeFactory().textNode(s);
    }

    private static String text(JsonNode node) throws Exception {
        return Json.MAPPER.writeValueAsString(node);
    }

    private static java.util.List<String> iterator(JsonNode object) {
        java.util.List<String> keys = new java.util.ArrayList<>();
        object.fieldNames().forEachRemaining(keys::add);
        return keys;
    }
}
