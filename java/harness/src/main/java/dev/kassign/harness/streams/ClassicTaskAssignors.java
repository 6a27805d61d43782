package dev.kassign.harness.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Handler;

/**
 * Kafka Streams' classic-protocol task assignors, run as {@code StreamsPartitionAssignor} runs them
 * ({@code LegacyTaskAssignor.assign(clients, allTasks, statefulTasks, rackAwareTaskAssignor, configs)}):
 * {@code high-availability} ({@code HighAvailabilityTaskAssignor}, with KIP-925's
 * {@code RackAwareTaskAssignor} when the instance's config asks for it) and {@code sticky-task}
 * ({@code LegacyStickyTaskAssignor}). Both with the interface of Kafka 3.8 onwards (KIP-924's
 * {@code ProcessId}); on an older release the answer is an error naming it. The Kafka-typed code lives in
 * {@link ClassicRun}, loaded only once the release is known to have these classes.
 */
public final class ClassicTaskAssignors implements Handler {
    static final String PROCESS_ID = "org.apache.kafka.streams.processor.assignment.ProcessId";
    static final String LEGACY_TASK_ASSIGNOR =
        "org.apache.kafka.streams.processor.internals.assignment.LegacyTaskAssignor";

    @Override
    public ObjectNode handle(JsonNode request) throws Exception {
        String name = request.path("assignor").asText();
        if (!StreamsInstance.hasClass(PROCESS_ID) || !StreamsInstance.hasClass(LEGACY_TASK_ASSIGNOR)) {
            throw new UnsupportedOperationException("Kafka " + StreamsInstance.kafkaVersion()
                + " predates the LegacyTaskAssignor interface of Kafka Streams 3.8 (KIP-924); the harness runs '"
                + name + "' on Kafka 3.8.0 and later");
        }
        return ClassicRun.run(name, StreamsInstance.of(request));
    }
}
