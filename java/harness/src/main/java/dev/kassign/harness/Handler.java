package dev.kassign.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One family of Kafka classes behind the harness: takes one request (a JSON object with
 * {@code assignor}, {@code instance} and optional {@code options}) and returns the answer of Kafka's
 * own classes on it. Implementations are looked up by name at run time, so a family whose classes a
 * release lacks never loads on that release's classpath.
 */
public interface Handler {
    /**
     * Runs Kafka's classes on one request.
     *
     * @param request the request line, already parsed
     * @return the answer's fields (the harness adds {@code id})
     * @throws Exception anything Kafka's classes throw; the harness reports it as the case's error
     */
    ObjectNode handle(JsonNode request) throws Exception;
}
