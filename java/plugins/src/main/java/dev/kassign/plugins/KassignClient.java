package dev.kassign.plugins;

import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One call of {@code POST /v1/assign}, cut at the deadline: the connection, the request and the wait for the
 * answer together never take longer than {@link KassignConfig#deadlineMs()}.
 */
public final class KassignClient {

    private final KassignConfig config;
    private final HttpClient http;
    private final long bodyLimit;

    /**
     * @param config the settings
     */
    public KassignClient(KassignConfig config) {
        this(config, LimitedBody.LIMIT);
    }

    /**
     * @param config    the settings
     * @param bodyLimit the largest answer read, in bytes
     */
    KassignClient(KassignConfig config, long bodyLimit) {
        this.config = config;
        this.bodyLimit = bodyLimit;
        this.http = HttpClient.newBuilder()
            .connectTimeout(Duration.ofMillis(config.deadlineMs()))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    }

    /**
     * Load and initialise the HTTP stack now, off the caller's thread: a {@code GET /healthz} whose answer is
     * ignored. The first request of a JVM loads many classes (seconds on a loaded machine), which would otherwise
     * fall on the first assignment and spend its deadline.
     */
    public void warmUp() {
        try {
            HttpRequest request = HttpRequest.newBuilder(config.url().resolve(config.url().getPath() + "/healthz"))
                .timeout(Duration.ofSeconds(10)).GET().build();
            http.sendAsync(request, HttpResponse.BodyHandlers.discarding());
        } catch (RuntimeException e) {
            // best effort only
        }
    }

    /** @return the settings */
    public KassignConfig config() {
        return config;
    }

    /**
     * Ask the service for an assignment.
     *
     * @param instance  the kassign/v1 instance
     * @param assignor  {@code optimal} or {@code optimal-streams}
     * @param startNanos {@link System#nanoTime()} when the assignment started (the deadline counts from it)
     * @return the answer's JSON object
     * @throws KassignException when there is no answer in time, the service fails, or the answer is not JSON
     */
    public Map<?, ?> assign(Map<String, Object> instance, String assignor, long startNanos) throws KassignException {
        return assign(instance, assignor, null, startNanos);
    }

    /**
     * Ask the service for an assignment, naming Kafka's assignor it compares with and falls back on.
     *
     * @param instance  the kassign/v1 instance
     * @param assignor  {@code optimal} or {@code optimal-streams}
     * @param fallback  the service's {@code fallback} (e.g. {@code streams-server-sticky}), or null for its default
     * @param startNanos {@link System#nanoTime()} when the assignment started (the deadline counts from it)
     * @return the answer's JSON object
     * @throws KassignException when there is no answer in time, the service fails, or the answer is not JSON
     */
    public Map<?, ?> assign(Map<String, Object> instance, String assignor, String fallback, long startNanos)
        throws KassignException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("instance", instance);
        body.put("assignor", assignor);
        body.put("deadline_ms", config.serviceMs());
        if (fallback != null) {
            body.put("fallback", fallback);
        }
        if (!"request".equals(config.weights()) && !"streams".equals(instance.get("protocol"))) {
            body.put("weights", Map.of("source", config.weights()));
        }
        String text = Json.write(body);
        long left = remainingMs(startNanos);
        if (left <= 0) {
            throw new KassignException("deadline of " + config.deadlineMs() + " ms passed before the request was sent");
        }
        HttpRequest request = HttpRequest.newBuilder(config.url().resolve(config.url().getPath() + "/v1/assign"))
            .timeout(Duration.ofMillis(left))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(text))
            .build();
        CompletableFuture<HttpResponse<String>> future = http.sendAsync(request, info -> new LimitedBody(bodyLimit));
        HttpResponse<String> response;
        try {
            response = future.get(Math.max(1, remainingMs(startNanos)), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw timeout();
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new KassignException("interrupted while waiting for " + config.url());
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof HttpTimeoutException) {
                throw timeout();
            }
            if (cause instanceof ConnectException) {
                throw new KassignException("cannot connect to " + config.url() + " (" + describe(cause) + ")");
            }
            if (cause instanceof IOException) {
                throw new KassignException("I/O error talking to " + config.url() + ": " + describe(cause));
            }
            throw new KassignException("error calling " + config.url() + ": " + describe(cause));
        }
        Object parsed;
        try {
            parsed = Json.parse(response.body());
        } catch (Json.ParseException e) {
            if (response.statusCode() != 200) {
                throw new KassignException("HTTP " + response.statusCode() + " from " + config.url());
            }
            throw new KassignException("invalid answer: not JSON (" + e.getMessage() + ")");
        }
        if (response.statusCode() != 200) {
            String detail = "";
            if (parsed instanceof Map<?, ?> m && m.get("error") != null) {
                detail = ": " + m.get("error") + (m.get("path") != null ? " (at " + m.get("path") + ")" : "");
            }
            throw new KassignException("HTTP " + response.statusCode() + " from " + config.url() + detail);
        }
        if (!(parsed instanceof Map<?, ?> answer)) {
            throw new KassignException("invalid answer: not a JSON object");
        }
        Object format = answer.get("format");
        if (format != null && !"kassign/v1".equals(format)) {
            throw new KassignException("invalid answer: format " + format + ", expected kassign/v1");
        }
        return answer;
    }

    private KassignException timeout() {
        return new KassignException("no answer from " + config.url() + " within the deadline of "
            + config.deadlineMs() + " ms");
    }

    private long remainingMs(long startNanos) {
        return config.deadlineMs() - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    private static String describe(Throwable t) {
        String msg = t.getMessage();
        return t.getClass().getSimpleName() + (msg == null || msg.isEmpty() ? "" : ": " + msg);
    }

    /**
     * The service's {@code stats.status}, or null.
     *
     * @param answer the answer
     * @return the status
     */
    static String status(Map<?, ?> answer) {
        if (answer.get("stats") instanceof Map<?, ?> stats && stats.get("status") != null) {
            return String.valueOf(stats.get("status"));
        }
        return null;
    }

    /**
     * @param startNanos a {@link System#nanoTime()}
     * @return milliseconds since then
     */
    static long elapsedMs(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    /**
     * @param answer the service's answer
     * @return a note for the log when the service answered with its own fallback, else ""
     */
    static String serviceFallback(Map<?, ?> answer) {
        if (answer.get("service") instanceof Map<?, ?> s && Boolean.TRUE.equals(s.get("fallback"))) {
            return "; the service answered with its own fallback: " + s.get("reason");
        }
        return "";
    }
}
