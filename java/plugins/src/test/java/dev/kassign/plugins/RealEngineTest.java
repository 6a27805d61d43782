package dev.kassign.plugins;

import com.sun.net.httpserver.HttpServer;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Executors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plug-ins against kassign's real engine: a stand-in service that answers each request with
 * {@code kassign assign INSTANCE -a ASSIGNOR} (the CLI named by the system property {@code kassign.bin}; the
 * Makefile's {@code java} target passes {@code .venv/bin/kassign}). Each plug-in's instance must be accepted by
 * kassign's validation and its answer must pass the plug-in's own checks: no fallback.
 */
@EnabledIfSystemProperty(named = "kassign.bin", matches = ".+")
class RealEngineTest {

    static HttpServer server;

    @BeforeAll
    static void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newCachedThreadPool());
        server.createContext("/v1/assign", exchange -> {
            int status = 500;
            String body;
            try {
                Map<?, ?> request = (Map<?, ?>) Json.parse(new String(exchange.getRequestBody().readAllBytes(),
                    StandardCharsets.UTF_8));
                Path file = Files.createTempFile("kassign-instance", ".json");
                Files.writeString(file, Json.write(request.get("instance")));
                Process p = new ProcessBuilder(System.getProperty("kassign.bin"), "assign", file.toString(), "-a",
                    String.valueOf(request.get("assignor"))).redirectErrorStream(false).start();
                body = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
                if (p.waitFor() == 0) {
                    status = 200;
                } else {
                    body = Json.write(Map.of("error", err.strip(), "path", "instance"));
                }
                Files.delete(file);
            } catch (Exception e) {
                body = Json.write(Map.of("error", e.toString()));
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
    }

    @AfterAll
    static void stop() {
        server.stop(0);
    }

    static Map<String, Object> config() {
        // The CLI starts a Python interpreter per request: give it time.
        return Map.of(KassignConfig.URL_CONFIG, "http://127.0.0.1:" + server.getAddress().getPort(),
            KassignConfig.DEADLINE_CONFIG, "120000");
    }

    @Test
    void consumerGroupAssignor() {
        KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
        assignor.configure(config());
        GroupAssignment result = assignor.assign(KassignConsumerGroupAssignorTest.group(),
            KassignConsumerGroupAssignorTest.DESCRIBER);
        assertFalse(assignor.lastOutcome().fallback(), assignor.lastOutcome().reason());
        assertEquals("optimal", assignor.lastOutcome().status());
        GroupAssignment uniform = new UniformAssignor().assign(KassignConsumerGroupAssignorTest.group(),
            KassignConsumerGroupAssignorTest.DESCRIBER);
        assertTrue(maxLoad(result) <= maxLoad(uniform), maxLoad(result) + " > uniform's " + maxLoad(uniform));
    }

    static int maxLoad(GroupAssignment a) {
        return a.members().values().stream()
            .mapToInt(m -> m.partitions().values().stream().mapToInt(java.util.Set::size).sum()).max().orElse(0);
    }

    @Test
    void streamsTaskAssignor() throws Exception {
        KassignStreamsTaskAssignor assignor = new KassignStreamsTaskAssignor();
        assignor.configure(config());
        var result = assignor.assign(KassignStreamsTaskAssignorTest.group(), KassignStreamsTaskAssignorTest.TOPOLOGY);
        assertFalse(assignor.lastOutcome().fallback(), assignor.lastOutcome().reason());
        assertEquals("optimal", assignor.lastOutcome().status());
        var expected = KassignStreamsTaskAssignor.read((Map<?, ?>) Json.parse(KassignStreamsTaskAssignorTest.GOOD),
            KassignStreamsTaskAssignor.translate(KassignStreamsTaskAssignorTest.group(),
                KassignStreamsTaskAssignorTest.TOPOLOGY));
        assertEquals(expected.members(), result.members());
    }

    @Test
    void classicConsumerAssignor() {
        KassignConsumerAssignor assignor = new KassignConsumerAssignor();
        assignor.configure(config());
        ConsumerPartitionAssignor.GroupAssignment result = assignor.assign(KassignConsumerAssignorTest.CLUSTER,
            KassignConsumerAssignorTest.group());
        assertFalse(assignor.lastOutcome().fallback(), assignor.lastOutcome().reason());
        assertEquals("optimal", assignor.lastOutcome().status());
        KassignConsumerAssignorTest.assertCooperative(KassignConsumerAssignorTest.group(), result);
    }
}
