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
}
