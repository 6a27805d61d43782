package dev.kassign.plugins;

/**
 * What the last {@code assign} call of a plug-in did: kassign's answer, or Kafka's own assignor and why.
 *
 * @param fallback true when Kafka's own assignor answered
 * @param reason   why it fell back (null when kassign's answer was used)
 * @param status   the service's {@code stats.status} when its answer was used (e.g. {@code optimal})
 * @param millis   wall-clock milliseconds of the whole call, fallback included
 */
public record Outcome(boolean fallback, String reason, String status, long millis) {
}
