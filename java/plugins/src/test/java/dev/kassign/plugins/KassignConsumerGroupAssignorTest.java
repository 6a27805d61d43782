package dev.kassign.plugins;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KassignConsumerGroupAssignorTest {

    static final Uuid T1 = new Uuid(1L, 1L);
    static final Uuid T2 = new Uuid(2L, 2L);

    /** The coordinator's topic view: partition counts and replica racks by topic id. */
    record Describer(Map<Uuid, Integer> counts, Map<Uuid, Map<Integer, Set<String>>> racks)
        implements SubscribedTopicDescriber {
        @Override
        public int numPartitions(Uuid topicId) {
            return counts.getOrDefault(topicId, -1);
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return racks.getOrDefault(topicId, Map.of()).getOrDefault(partition, Set.of());
        }
    }

    static final Describer DESCRIBER = new Describer(
        Map.of(T1, 3, T2, 2),
        Map.of(T1, Map.of(0, Set.of("r2", "r1"), 1, Set.of("r2"), 2, Set.of("r3")), T2, Map.of(1, Set.of("r1"))));

    /** A: T1+T2, rack r1, owns T1-0, T1-1; B: T1, static member i-b, owns T2-0 (no longer subscribed); C: T2. */
    static GroupSpecImpl group() {
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new LinkedHashMap<>();
        members.put("A", new MemberSubscriptionAndAssignmentImpl(Optional.of("r1"), Optional.empty(), Set.of(T1, T2),
            new Assignment(Map.of(T1, Set.of(1, 0)))));
        members.put("B", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.of("i-b"), Set.of(T1),
            new Assignment(Map.of(T2, Set.of(0)))));
        members.put("C", new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(T2),
            new Assignment(Map.of())));
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        inverted.computeIfAbsent(T1, k -> new HashMap<>()).put(0, "A");
        inverted.computeIfAbsent(T1, k -> new HashMap<>()).put(1, "A");
        inverted.computeIfAbsent(T2, k -> new HashMap<>()).put(0, "B");
        return new GroupSpecImpl(members, SubscriptionType.HETEROGENEOUS, inverted);
    }

    static final String INSTANCE = "{\"format\":\"kassign/v1\",\"protocol\":\"consumer\",\"topics\":{"
        + "\"AAAAAAAAAAEAAAAAAAAAAQ\":{\"partitions\":3,\"id\":\"AAAAAAAAAAEAAAAAAAAAAQ\","
        + "\"racks\":[[\"r1\",\"r2\"],[\"r2\"],[\"r3\"]]},"
        + "\"AAAAAAAAAAIAAAAAAAAAAg\":{\"partitions\":2,\"id\":\"AAAAAAAAAAIAAAAAAAAAAg\",\"racks\":[[],[\"r1\"]]}},"
        + "\"members\":["
        + "{\"id\":\"A\",\"topics\":[\"AAAAAAAAAAEAAAAAAAAAAQ\",\"AAAAAAAAAAIAAAAAAAAAAg\"],"
        + "\"owned\":{\"AAAAAAAAAAEAAAAAAAAAAQ\":[0,1]},\"rack\":\"r1\"},"
        + "{\"id\":\"B\",\"topics\":[\"AAAAAAAAAAEAAAAAAAAAAQ\"],\"owned\":{\"AAAAAAAAAAIAAAAAAAAAAg\":[0]},"
        + "\"instance_id\":\"i-b\"},"
        + "{\"id\":\"C\",\"topics\":[\"AAAAAAAAAAIAAAAAAAAAAg\"]}]}";

    static final String N1 = T1.toString();
    static final String N2 = T2.toString();

    static String answer(String assignment) {
        return "{\"format\":\"kassign/v1\",\"assignor\":\"optimal\",\"assignment\":" + assignment
            + ",\"stats\":{\"status\":\"optimal\"},\"service\":{\"fallback\":false,\"reason\":null}}";
    }

    static final String GOOD = answer("{\"A\":{\"" + N1 + "\":[0,1]},\"B\":{\"" + N1 + "\":[2]},\"C\":{\"" + N2
        + "\":[0,1]}}");

    @Test
    void translatesTheGroupToKassignsFormat() {
        assertEquals(INSTANCE, Json.write(KassignConsumerGroupAssignor.translate(group(), DESCRIBER).instance()));
    }

    @Test
    void usesAValidAnswer() throws Exception {
        try (StubService service = new StubService()) {
            service.body = GOOD;
            KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
            assignor.configure(service.config(10000));
            GroupAssignment result = assignor.assign(group(), DESCRIBER);
            Map<String, Map<Uuid, Set<Integer>>> got = new HashMap<>();
            result.members().forEach((m, a) -> got.put(m, a.partitions()));
            assertEquals(Map.of("A", Map.of(T1, Set.of(0, 1)), "B", Map.of(T1, Set.of(2)), "C", Map.of(T2, Set.of(0, 1))),
                got);
            assertFalse(assignor.lastOutcome().fallback());
            assertEquals("optimal", assignor.lastOutcome().status());
            Map<?, ?> request = (Map<?, ?>) Json.parse(service.requests.get(0));
            assertEquals("optimal", request.get("assignor"));
            assertEquals(8000L, request.get("deadline_ms")); // 10,000 ms minus the default margin (a fifth)
            assertEquals(Json.parse(INSTANCE), request.get("instance"));
        }
    }

    static Map<String, Map<Uuid, Set<Integer>>> uniform() {
        GroupAssignment expected = new UniformAssignor().assign(group(), DESCRIBER);
        Map<String, Map<Uuid, Set<Integer>>> out = new HashMap<>();
        expected.members().forEach((m, a) -> out.put(m, a.partitions()));
        return out;
    }

    static void assertFallsBack(String body, int status, String reason) throws Exception {
        try (StubService service = new StubService()) {
            service.body = body;
            service.status = status;
            KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
            assignor.configure(service.config(10000));
            GroupAssignment result = assignor.assign(group(), DESCRIBER);
            Map<String, Map<Uuid, Set<Integer>>> got = new HashMap<>();
            result.members().forEach((m, a) -> got.put(m, a.partitions()));
            assertEquals(uniform(), got);
            assertTrue(assignor.lastOutcome().fallback());
            assertTrue(assignor.lastOutcome().reason().contains(reason), assignor.lastOutcome().reason());
        }
    }

    @Test
    void rejectsAPartitionAssignedTwice() throws Exception {
        assertFallsBack(answer("{\"A\":{\"" + N1 + "\":[0,1,2]},\"B\":{\"" + N1 + "\":[2]},\"C\":{\"" + N2
            + "\":[0,1]}}"), 200, "partition " + N1 + "-2 is assigned twice (to 'A' and 'B')");
    }

    @Test
    void rejectsAPartitionGivenToANonSubscriber() throws Exception {
        assertFallsBack(answer("{\"A\":{\"" + N1 + "\":[0,1]},\"B\":{\"" + N1 + "\":[2],\"" + N2 + "\":[0]},\"C\":{\""
            + N2 + "\":[1]}}"), 200, "member 'B' got topic '" + N2 + "' it does not subscribe to");
    }

    @Test
    void rejectsAnUnassignedPartition() throws Exception {
        assertFallsBack(answer("{\"A\":{\"" + N1 + "\":[0,1]},\"B\":{},\"C\":{\"" + N2 + "\":[0,1]}}"), 200,
            "partition " + N1 + "-2 is not assigned");
    }

    @Test
    void rejectsAnUnknownMemberAndAnOutOfRangePartition() throws Exception {
        assertFallsBack(answer("{\"Z\":{}}"), 200, "member 'Z' is not in the group");
        assertFallsBack(answer("{\"A\":{\"" + N1 + "\":[0,1,3]},\"B\":{\"" + N1 + "\":[2]},\"C\":{\"" + N2
            + "\":[0,1]}}"), 200, "partition 3 of topic '" + N1 + "' (member 'A') is not one of its 3 partitions");
    }

    @Test
    void fallsBackOnAnAnswerThatIsNotJson() throws Exception {
        assertFallsBack("{\"assignment\": ", 200, "invalid answer: not JSON");
        assertFallsBack("[1]", 200, "invalid answer: not a JSON object");
        assertFallsBack("{\"format\":\"kassign/v1\"}", 200, "invalid answer: no \"assignment\" object");
    }

    @Test
    void fallsBackOnHttp500() throws Exception {
        assertFallsBack("{\"error\":\"boom\",\"path\":null}", 500, "HTTP 500 from http://127.0.0.1:");
        assertFallsBack("{\"error\":\"instance.members[0].topics: not a list\",\"path\":\"instance.members\"}", 422,
            "HTTP 422 from http://127.0.0.1:");
    }

    @Test
    void fallsBackWhenTheServiceIsDown() throws Exception {
        KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
        String url = StubService.refusedUrl();
        assignor.configure(Map.of(KassignConfig.URL_CONFIG, url, KassignConfig.DEADLINE_CONFIG, "10000"));
        GroupAssignment result = assignor.assign(group(), DESCRIBER);
        Map<String, Map<Uuid, Set<Integer>>> got = new HashMap<>();
        result.members().forEach((m, a) -> got.put(m, a.partitions()));
        assertEquals(uniform(), got);
        assertTrue(assignor.lastOutcome().reason().startsWith("cannot connect to " + url),
            assignor.lastOutcome().reason());
    }

    @Test
    void neverWaitsPastTheDeadline() throws Exception {
        try (StubService service = new StubService()) {
            service.body = GOOD;
            KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
            assignor.configure(service.config(300));
            assignor.assign(group(), DESCRIBER);
            service.sleepMs = 5000;
            long start = System.nanoTime();
            GroupAssignment result = assignor.assign(group(), DESCRIBER);
            long ms = (System.nanoTime() - start) / 1_000_000;
            // the service sleeps 5 s: well under that proves the cut; the margin absorbs a loaded machine
            assertTrue(ms < 300 + 2000, "took " + ms + " ms with a deadline of 300 ms");
            Map<String, Map<Uuid, Set<Integer>>> got = new HashMap<>();
            result.members().forEach((m, a) -> got.put(m, a.partitions()));
            assertEquals(uniform(), got);
            assertEquals("no answer from " + service.url() + " within the deadline of 300 ms",
                assignor.lastOutcome().reason());
        }
    }

    @Test
    void anEmptyGroupAndAnAnswerWithoutEmptyMembers() throws Exception {
        try (StubService service = new StubService()) {
            // C is left out of the answer: it gets nothing, every partition of T1 is still assigned once.
            service.body = answer("{\"A\":{\"" + N1 + "\":[0,1]," + "\"" + N2 + "\":[0,1]},\"B\":{\"" + N1 + "\":[2]}}");
            KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
            assignor.configure(service.config(10000));
            GroupAssignment result = assignor.assign(group(), DESCRIBER);
            assertEquals(Map.of(), result.members().get("C").partitions());
            assertNull(assignor.lastOutcome().reason());
        }
    }

    @Test
    void memberAssignmentIsReadThroughTheApi() {
        MemberAssignment a = new KassignConsumerGroupAssignor.Partitions(Map.of(T1, Set.of(1)));
        assertEquals(Map.of(T1, Set.of(1)), a.partitions());
    }
}
