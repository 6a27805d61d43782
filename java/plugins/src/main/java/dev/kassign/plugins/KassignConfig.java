package dev.kassign.plugins;

import java.net.URI;
import java.util.Locale;
import java.util.Map;

/**
 * The plug-ins' settings. Each is read, first found wins, from the plug-in's configuration (the broker's
 * {@code server.properties} for the broker-side assignors, the consumer's properties for the client-side one),
 * then a Java system property of the same name, then an environment variable (upper case, dots as
 * underscores: {@code KASSIGN_SERVICE_URL}), then the default.
 *
 * <ul>
 *   <li>{@code kassign.service.url} (default {@value #DEFAULT_URL}): where {@code kassign serve} listens; the
 *       plug-in posts to {@code <url>/v1/assign}.</li>
 *   <li>{@code kassign.deadline.ms} (default {@value #DEFAULT_DEADLINE_MS}, at least {@value #MIN_DEADLINE_MS}):
 *       the longest an assignment waits for the service, connection included; then Kafka's own assignor
 *       answers.</li>
 *   <li>{@code kassign.service.margin.ms} (default a fifth of the deadline, at least 50): the service is asked
 *       to answer within the deadline minus this margin (request field {@code deadline_ms}, never below the
 *       service's minimum of 50), so that its best-at-the-deadline answer still arrives in time.</li>
 *   <li>{@code kassign.weights.source} (default {@code request}): where the service takes a consumer group's
 *       partition weights from: {@code request} (none sent: unit weights) or {@code file} (the service's
 *       {@code --weights-file}, e.g. lag written by a job; request field {@code weights.source}). Streams groups
 *       always send their own task offsets.</li>
 * </ul>
 *
 * @param url         the service's base URL
 * @param deadlineMs  the plug-in's deadline
 * @param serviceMs   the {@code deadline_ms} sent to the service
 * @param weights     the {@code weights.source} of consumer groups' requests ({@code request} or {@code file})
 */
public record KassignConfig(URI url, long deadlineMs, long serviceMs, String weights) {

    /** {@code kassign serve}'s default address. */
    public static final String DEFAULT_URL = "http://127.0.0.1:8736";
    /** The default deadline. */
    public static final long DEFAULT_DEADLINE_MS = 1000;
    /** The shortest deadline accepted. */
    public static final long MIN_DEADLINE_MS = 10;
    /** The shortest {@code deadline_ms} the service accepts. */
    public static final long SERVICE_MIN_MS = 50;

    /** Setting: the service URL. */
    public static final String URL_CONFIG = "kassign.service.url";
    /** Setting: the deadline. */
    public static final String DEADLINE_CONFIG = "kassign.deadline.ms";
    /** Setting: the margin. */
    public static final String MARGIN_CONFIG = "kassign.service.margin.ms";
    /** Setting: the weights' source. */
    public static final String WEIGHTS_CONFIG = "kassign.weights.source";

    /**
     * Read the settings.
     *
     * @param configs the plug-in's configuration (may be null)
     * @return the settings
     * @throws IllegalArgumentException naming the setting when a value is not valid
     */
    public static KassignConfig from(Map<String, ?> configs) {
        String url = lookup(configs, URL_CONFIG, DEFAULT_URL);
        URI uri;
        try {
            uri = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(URL_CONFIG + ": not a URL: " + url);
        }
        if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) {
            throw new IllegalArgumentException(URL_CONFIG + ": expected an http:// or https:// URL, got " + url);
        }
        long deadline = number(configs, DEADLINE_CONFIG, DEFAULT_DEADLINE_MS);
        if (deadline < MIN_DEADLINE_MS || deadline > 600_000) {
            throw new IllegalArgumentException(DEADLINE_CONFIG + ": expected milliseconds between "
                + MIN_DEADLINE_MS + " and 600000, got " + deadline);
        }
        long margin = number(configs, MARGIN_CONFIG, Math.max(50, deadline / 5));
        if (margin < 0) {
            throw new IllegalArgumentException(MARGIN_CONFIG + ": expected milliseconds >= 0, got " + margin);
        }
        String weights = lookup(configs, WEIGHTS_CONFIG, "request").trim();
        if (!weights.equals("request") && !weights.equals("file")) {
            throw new IllegalArgumentException(WEIGHTS_CONFIG + ": expected 'request' or 'file', got '" + weights + "'");
        }
        return new KassignConfig(uri, deadline, Math.max(SERVICE_MIN_MS, deadline - margin), weights);
    }

    private static long number(Map<String, ?> configs, String key, long dflt) {
        String text = lookup(configs, key, Long.toString(dflt)).trim();
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + ": expected an integer (milliseconds), got '" + text + "'");
        }
    }

    private static String lookup(Map<String, ?> configs, String key, String dflt) {
        if (configs != null && configs.get(key) != null) {
            return configs.get(key).toString();
        }
        String prop = System.getProperty(key);
        if (prop != null) {
            return prop;
        }
        String env = System.getenv(key.toUpperCase(Locale.ROOT).replace('.', '_'));
        return env != null ? env : dflt;
    }
}
