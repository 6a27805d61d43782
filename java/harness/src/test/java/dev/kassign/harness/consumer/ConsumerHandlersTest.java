package dev.kassign.harness.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kassign.harness.Json;
import org.junit.jupiter.api.Test;

/** Exact answers of Kafka 4.4.0's consumer assignors on small groups, through the harness's handlers. */
class ConsumerHandlersTest {
    private static final String TOPICS = "\"topics\": {\"T\": {\"partitions\": 4, \"id\": "
        + "\"00000000-0000-0001-0000-000000000002\"}}";

    private static JsonNode req(String assignor, String members) throws Exception {
        return Json.MAPPER.readTree("{\"assignor\": \"" + assignor + "\", \"instance\": {" + TOPICS
            + ", \"members\": [" + members + "]}}");
    }

    @Test
    void cooperativeStickyWithholdsWhatChangesOwner() throws Exception {
        JsonNode r = req("cooperative-sticky", "{\"id\": \"a\", \"topics\": [\"T\"], \"owned\": {\"T\": [0, 1, 2, 3]},"
            + " \"generation\": 1}, {\"id\": \"b\", \"topics\": [\"T\"]}");
        assertEquals("{\"a\":{\"T\":[0,1]},\"b\":{}}", new ClassicAssignors().handle(r).get("assignment").toString());
    }

    @Test
    void eagerStickyReadsItsUserData() throws Exception {
        JsonNode r = req("sticky", "{\"id\": \"a\", \"topics\": [\"T\"], \"owned\": {\"T\": [3]}, \"generation\": 1},"
            + " {\"id\": \"b\", \"topics\": [\"T\"], \"owned\": {\"T\": [0]}, \"generation\": 1}");
        assertEquals("{\"a\":{\"T\":[1,3]},\"b\":{\"T\":[0,2]}}",
            new ClassicAssignors().handle(r).get("assignment").toString());
    }

    @Test
    void uniformKeepsCurrentPartitions() throws Exception {
        JsonNode r = req("uniform", "{\"id\": \"a\", \"topics\": [\"T\"], \"owned\": {\"T\": [3, 2]}},"
            + " {\"id\": \"b\", \"topics\": [\"T\"]}");
        assertEquals("{\"a\":{\"T\":[2,3]},\"b\":{\"T\":[0,1]}}",
            new ServerAssignors().handle(r).get("assignment").toString());
    }

    @Test
    void theProtocolSortsTopicsAndOwnedPartitions() throws Exception {
        JsonNode r = Json.MAPPER.readTree("{\"assignor\": \"consumer-protocol\", \"options\": {\"op\": \"encode\","
            + " \"version\": 3, \"subscription\": {\"topics\": [\"b\", \"a\"], \"user_data\": null,"
            + " \"owned\": {\"b\": [1]}, \"generation\": 4, \"rack\": \"r1\"}}}");
        assertEquals("000300000002000161000162ffffffff0000000100016200000001000000010000000400027231",
            new ConsumerProtocolCodec().handle(r).get("bytes").asText());
    }
}
