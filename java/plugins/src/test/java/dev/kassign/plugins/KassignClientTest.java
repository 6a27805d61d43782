package dev.kassign.plugins;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class KassignClientTest {

    static final Map<String, Object> INSTANCE = Map.of("format", "kassign/v1", "topics", Map.of(), "members",
        java.util.List.of());

    @Test
    void refusesAnAnswerLargerThanItsLimit() throws Exception {
        try (StubService service = new StubService()) {
            service.body = "{\"assignment\":{\"x\":\"" + "a".repeat(5000) + "\"}}";
            KassignClient client = new KassignClient(KassignConfig.from(service.config(10000)), 4096);
            KassignException e = assertThrows(KassignException.class,
                () -> client.assign(INSTANCE, "optimal", System.nanoTime()));
            assertEquals("I/O error talking to " + service.url() + ": IOException: answer larger than 4096 bytes",
                e.getMessage());
            service.body = "{\"assignment\":{}}";
            assertEquals(Map.of("assignment", Map.of()), client.assign(INSTANCE, "optimal", System.nanoTime()));
        }
    }

    @Test
    void postsTheContractsRequest() throws Exception {
        try (StubService service = new StubService()) {
            service.body = "{\"format\":\"kassign/v1\",\"assignment\":{}}";
            KassignClient client = new KassignClient(KassignConfig.from(Map.of(KassignConfig.URL_CONFIG,
                service.url() + "/", KassignConfig.DEADLINE_CONFIG, "5000", KassignConfig.MARGIN_CONFIG, "1000")));
            client.assign(INSTANCE, "optimal-streams", System.nanoTime());
            Map<?, ?> request = (Map<?, ?>) Json.parse(service.requests.get(0));
            assertEquals(java.util.List.of("instance", "assignor", "deadline_ms"), java.util.List.copyOf(request.keySet()));
            assertEquals("optimal-streams", request.get("assignor"));
            assertEquals(4000L, request.get("deadline_ms"));
        }
    }

    @Test
    void asksForTheWeightsFileWhenConfigured() throws Exception {
        try (StubService service = new StubService()) {
            service.body = "{\"format\":\"kassign/v1\",\"assignment\":{}}";
            KassignClient client = new KassignClient(KassignConfig.from(Map.of(KassignConfig.URL_CONFIG,
                service.url(), KassignConfig.WEIGHTS_CONFIG, "file")));
            client.assign(Map.of("format", "kassign/v1", "protocol", "consumer"), "optimal", System.nanoTime());
            Map<?, ?> request = (Map<?, ?>) Json.parse(service.requests.get(0));
            assertEquals(Map.of("source", "file"), request.get("weights"));
            // a Streams group carries its own task offsets: never the file
            client.assign(Map.of("format", "kassign/v1", "protocol", "streams"), "optimal-streams", System.nanoTime());
            assertEquals(null, ((Map<?, ?>) Json.parse(service.requests.get(1))).get("weights"));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> KassignConfig.from(Map.of(KassignConfig.WEIGHTS_CONFIG, "admin")));
        assertEquals("kassign.weights.source: expected 'request' or 'file', got 'admin'", e.getMessage());
    }
}
