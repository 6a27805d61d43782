package dev.kassign.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Batch mode: one JVM answers many cases. Reads JSON lines on stdin, writes one JSON line per input
 * on stdout, in input order. The first line out is {@code {"ready": true, "kafka_version": ...}}: the
 * release whose classes are on the classpath. Every answer carries the request's {@code id}; a case
 * Kafka's classes refuse carries {@code error} instead of an answer. The contract is
 * java/harness/README.md.
 */
public final class Harness {
    /** Request {@code assignor} -> the handler class that answers it. */
    private static final Map<String, String> HANDLERS = Map.ofEntries(
        Map.entry("range", "dev.kassign.harness.consumer.ClassicAssignors"),
        Map.entry("roundrobin", "dev.kassign.harness.consumer.ClassicAssignors"),
        Map.entry("sticky", "dev.kassign.harness.consumer.ClassicAssignors"),
        Map.entry("cooperative-sticky", "dev.kassign.harness.consumer.ClassicAssignors"),
        Map.entry("uniform", "dev.kassign.harness.consumer.ServerAssignors"),
        Map.entry("server-range", "dev.kassign.harness.consumer.ServerAssignors"),
        Map.entry("consumer-protocol", "dev.kassign.harness.consumer.ConsumerProtocolCodec"),
        Map.entry("high-availability", "dev.kassign.harness.streams.ClassicTaskAssignors"),
        Map.entry("sticky-task", "dev.kassign.harness.streams.ClassicTaskAssignors"),
        Map.entry("kip924-sticky", "dev.kassign.harness.streams.Kip924Assignors"),
        Map.entry("streams-server-sticky", "dev.kassign.harness.streams.ServerTaskAssignors"),
        Map.entry("subscription-info", "dev.kassign.harness.streams.SubscriptionInfoCodec"));

    private final Map<String, Handler> loaded = new HashMap<>();

    private Harness() {
    }

    /** The release whose classes are on the classpath, as Kafka reports it. */
    public static String kafkaVersion() {
        // The resource kafka-clients' AppInfoParser reads (the class moved between releases; the file did not).
        try (java.io.InputStream in = Harness.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            java.util.Properties p = new java.util.Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** Answers one request line (never throws: a failure is the answer's {@code error}). */
    ObjectNode answer(String line) {
        ObjectNode out = Json.object();
        JsonNode request;
        try {
            request = Json.MAPPER.readTree(line);
        } catch (Exception e) {
            out.putNull("id");
            out.put("error", "not JSON: " + e.getMessage());
            return out;
        }
        out.set("id", request.get("id") == null ? Json.MAPPER.nullNode() : request.get("id"));
        try {
            String name = Json.required(request, "assignor", "request").asText();
            Handler handler = handler(name);
            ObjectNode result = handler.handle(request);
            out.setAll(result);
        } catch (Throwable e) {
            // The case's error, and the harness goes on with the next one.
            String msg = e.getMessage();
            out.put("error", e.getClass().getName() + (msg == null ? "" : ": " + msg));
        }
        return out;
    }

    private Handler handler(String name) throws ReflectiveOperationException {
        String cls = HANDLERS.get(name);
        if (cls == null) {
            throw new IllegalArgumentException("unknown assignor '" + name + "'; known: " + HANDLERS.keySet());
        }
        Handler h = loaded.get(cls);
        if (h == null) {
            h = (Handler) Class.forName(cls).getDeclaredConstructor().newInstance();
            loaded.put(cls, h);
        }
        return h;
    }

    /**
     * Reads requests from stdin until it closes.
     *
     * @param args unused
     * @throws Exception when stdin or stdout fail
     */
    public static void main(String[] args) throws Exception {
        // Kafka's classes log through slf4j and some print to stdout; keep stdout for answers only.
        PrintStream answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
            StandardCharsets.UTF_8);
        System.setOut(System.err);
        Harness harness = new Harness();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(answers, StandardCharsets.UTF_8));
        ObjectNode ready = Json.object();
        ready.put("ready", true);
        ready.put("kafka_version", kafkaVersion());
        out.write(Json.MAPPER.writeValueAsString(ready));
        out.newLine();
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            out.write(Json.MAPPER.writeValueAsString(harness.answer(line)));
            out.newLine();
            // Flush per answer: a caller may send one case and wait for its answer.
            out.flush();
        }
    }
}
