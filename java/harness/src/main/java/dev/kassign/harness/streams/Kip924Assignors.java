package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;

/**
 * {@code kip924-sticky}: Kafka Streams' public KIP-924 task assignor
 * {@code org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor} (Kafka 3.8+), run as
 * Kafka Streams runs a custom {@code task.assignor.class}: through the public {@code TaskAssignor} API
 * ({@code ApplicationState}, {@code KafkaStreamsState}, {@code TaskInfo}), implemented in {@link Kip924Run}
 * (loaded only once the release is known to have the API). On an older release the answer is an error.
 */
public final class Kip924Assignors implements Handler {
    static final String STICKY = "org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor";

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        if (!StreamsInstance.hasClass(STICKY)) {
            throw new UnsupportedOperationException("Kafka " + StreamsInstance.kafkaVersion()
                + " has no KIP-924 StickyTaskAssignor (Kafka Streams 3.8.0 and later)");
        }
        return Kip924Run.run(StreamsInstance.of(request));
    }
}
