package dev.kassign.plugins;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KassignStreamsTaskAssignorTest {

    static final String P1 = "11111111-1111-1111-1111-111111111111";
    static final String P2 = "22222222-2222-2222-2222-222222222222";

    /** A topology: subtopology ids in order, their partition counts, the stateful ones. */
    record Topology(List<String> subtopologies, Map<String, Integer> partitions, Set<String> stateful)
        implements TopologyDescriber {
        @Override
        public int maxNumInputPartitions(String subtopologyId) {
            Integer n = partitions.get(subtopologyId);
            if (n == null) {
                throw new NoSuchElementException(subtopologyId);
            }
            return n;
        }

        @Override
        public boolean isStateful(String subtopologyId) {
            return stateful.contains(subtopologyId);
        }
    }

    static final Topology TOPOLOGY = new Topology(List.of("0", "1"), Map.of("0", 2, "1", 1), Set.of("0"));

    static MemberMetadataAndStateImpl member(String process, Optional<String> rack, Map<String, Set<Integer>> active,
                                             Map<String, Set<Integer>> standby, Map<String, Map<Integer, Long>> offsets,
                                             Map<String, Map<Integer, Long>> ends) {
        return new MemberMetadataAndStateImpl(Optional.empty(), rack, process, Map.of(), active, standby, Map.of(),
            offsets, ends);
    }

    /**
     * Process P1 (rack r1): m1 runs 0_0 and reports offset 90 of 0_1 (end 100), m2 runs the stateless 1_0.
     * Process P2: m3 runs 0_1, has a standby of 0_0 at offset 50 (end 80). One standby per stateful task.
     */
    static GroupSpecImpl group() {
        Map<String, MemberMetadataAndStateImpl> members = new LinkedHashMap<>();
        members.put("m1", member(P1, Optional.of("r1"), Map.of("0", Set.of(0)), Map.of(),
            Map.of("0", Map.of(1, 90L)), Map.of("0", Map.of(1, 100L))));
        members.put("m2", member(P1, Optional.of("r1"), Map.of("1", Set.of(0)), Map.of(), Map.of(), Map.of()));
        members.put("m3", member(P2, Optional.empty(), Map.of("0", Set.of(1)), Map.of("0", Set.of(0)),
            Map.of("0", Map.of(0, 50L)), Map.of("0", Map.of(0, 80L))));
        return new GroupSpecImpl(members, new AssignmentConfigsImpl(1, List.of()));
    }

    static final String INSTANCE = "{\"format\":\"kassign/v1\",\"protocol\":\"streams\",\"tasks\":["
        + "{\"id\":\"0_0\",\"stateful\":true},{\"id\":\"0_1\",\"stateful\":true},{\"id\":\"1_0\",\"stateful\":false}],"
        + "\"clients\":["
        + "{\"id\":\"" + P1 + "\",\"process_id\":\"" + P1 + "\",\"rack\":\"r1\",\"lags\":{\"0_1\":10},\"members\":["
        + "{\"id\":\"m1\",\"active\":[\"0_0\"],\"standby\":[],\"task_offsets\":{\"0_1\":90}},"
        + "{\"id\":\"m2\",\"active\":[\"1_0\"],\"standby\":[]}]},"
        + "{\"id\":\"" + P2 + "\",\"process_id\":\"" + P2 + "\",\"lags\":{\"0_0\":30},\"members\":["
        + "{\"id\":\"m3\",\"active\":[\"0_1\"],\"standby\":[\"0_0\"],\"task_offsets\":{\"0_0\":50}}]}],"
        + "\"config\":{\"num_standby_replicas\":1,\"active_on_caught_up\":false}}";

    static String answer(String members) {
        return "{\"format\":\"kassign/v1\",\"assignor\":\"optimal-streams\",\"assignment\":{},\"members\":" + members
            + ",\"stats\":{\"status\":\"optimal\"},\"service\":{\"fallback\":false,\"reason\":null}}";
    }

    /** What kassign assign -a optimal-streams answers for INSTANCE (members part). */
    static final String GOOD = answer("{\"m1\":{\"active\":[\"0_0\"],\"standby\":[\"0_1\"],\"warmup\":[]},"
        + "\"m2\":{\"active\":[\"1_0\"],\"standby\":[],\"warmup\":[]},"
        + "\"m3\":{\"active\":[\"0_1\"],\"standby\":[\"0_0\"],\"warmup\":[]}}");

    @Test
    void translatesTheGroupToKassignsFormat() {
        assertEquals(INSTANCE, Json.write(KassignStreamsTaskAssignor.translate(group(), TOPOLOGY).instance()));
    }

    @Test
    void subtopologyIdsThatAreNotNumbersAreNumberedAndMappedBack() throws Exception {
        Topology named = new Topology(List.of("joins", "agg"), Map.of("joins", 1, "agg", 1), Set.of());
        Map<String, MemberMetadataAndStateImpl> members = new LinkedHashMap<>();
        members.put("m", member("not-a-uuid", Optional.empty(), Map.of("agg", Set.of(0)), Map.of(), Map.of(), Map.of()));
        GroupSpecImpl spec = new GroupSpecImpl(members, new AssignmentConfigsImpl(0, List.of()));
        KassignStreamsTaskAssignor.Translation t = KassignStreamsTaskAssignor.translate(spec, named);
        String uuid = java.util.UUID.nameUUIDFromBytes("not-a-uuid".getBytes(java.nio.charset.StandardCharsets.UTF_8))
            .toString();
        assertEquals("{\"format\":\"kassign/v1\",\"protocol\":\"streams\",\"tasks\":["
            + "{\"id\":\"0_0\",\"stateful\":false},{\"id\":\"1_0\",\"stateful\":false}],\"clients\":["
            + "{\"id\":\"not-a-uuid\",\"process_id\":\"" + uuid + "\",\"members\":["
            + "{\"id\":\"m\",\"active\":[\"1_0\"],\"standby\":[]}]}],\"config\":{\"num_standby_replicas\":0,\"active_on_caught_up\":false}}",
            Json.write(t.instance()));
        GroupAssignment read = KassignStreamsTaskAssignor.read((Map<?, ?>) Json.parse(
            answer("{\"m\":{\"active\":[\"0_0\",\"1_0\"],\"standby\":[],\"warmup\":[]}}")), t);
        assertEquals(new MemberAssignment(Map.of("joins", Set.of(0), "agg", Set.of(0)), Map.of()),
            read.members().get("m"));
    }

    @Test
    void usesAValidAnswerAndGivesWarmupsAsStandbys() throws Exception {
        try (StubService service = new StubService()) {
            service.body = answer("{\"m1\":{\"active\":[\"0_0\"],\"standby\":[],\"warmup\":[\"0_1\"]},"
                + "\"m2\":{\"active\":[\"1_0\"]},\"m3\":{\"active\":[\"0_1\"],\"standby\":[\"0_0\"],\"warmup\":[]}}");
            KassignStreamsTaskAssignor assignor = new KassignStreamsTaskAssignor();
            assignor.configure(service.config(10000));
            GroupAssignment result = assignor.assign(group(), TOPOLOGY);
            assertEquals(Map.of(
                "m1", new MemberAssignment(Map.of("0", Set.of(0)), Map.of("0", Set.of(1))),
                "m2", new MemberAssignment(Map.of("1", Set.of(0)), Map.of()),
                "m3", new MemberAssignment(Map.of("0", Set.of(1)), Map.of("0", Set.of(0)))), result.members());
            assertFalse(assignor.lastOutcome().fallback());
            Map<?, ?> request = (Map<?, ?>) Json.parse(service.requests.get(0));
            assertEquals("optimal-streams", request.get("assignor"));
            assertEquals("streams-server-sticky", request.get("fallback"));
            assertEquals(Json.parse(INSTANCE), request.get("instance"));
        }
    }

    static void assertFallsBack(String body, int status, String reason) throws Exception {
        try (StubService service = new StubService()) {
            service.body = body;
            service.status = status;
            KassignStreamsTaskAssignor assignor = new KassignStreamsTaskAssignor();
            assignor.configure(service.config(10000));
            GroupAssignment result = assignor.assign(group(), TOPOLOGY);
            assertEquals(new StickyTaskAssignor().assign(group(), TOPOLOGY).members(), result.members());
            assertTrue(assignor.lastOutcome().fallback());
            assertTrue(assignor.lastOutcome().reason().contains(reason), assignor.lastOutcome().reason());
        }
    }

    @Test
    void rejectsATaskActiveTwice() throws Exception {
        assertFallsBack(answer("{\"m1\":{\"active\":[\"0_0\"]},\"m2\":{\"active\":[\"1_0\"]},"
            + "\"m3\":{\"active\":[\"0_1\",\"0_0\"]}}"), 200, "task 0_0 is active twice (members 'm1' and 'm3')");
    }

    @Test
    void rejectsAStandbyOnTheProcessOfItsActive() throws Exception {
        // m2 shares process P1 with m1, which runs 0_0.
        assertFallsBack(answer("{\"m1\":{\"active\":[\"0_0\"]},\"m2\":{\"active\":[\"1_0\"],\"standby\":[\"0_0\"]},"
            + "\"m3\":{\"active\":[\"0_1\"]}}"), 200, "task 0_0 is twice on process " + P1
            + " (members 'm1' and 'm2', standby)");
        assertFallsBack(answer("{\"m1\":{\"active\":[\"0_0\"],\"warmup\":[\"0_0\"]},\"m2\":{\"active\":[\"1_0\"]},"
            + "\"m3\":{\"active\":[\"0_1\"]}}"), 200, "task 0_0 is twice on process " + P1 + " (member 'm1', warmup)");
    }

    @Test
    void rejectsStatelessStandbysMissingActivesAndStrangers() throws Exception {
        assertFallsBack(answer("{\"m1\":{\"active\":[\"0_0\"]},\"m2\":{\"active\":[\"1_0\"]},"
            + "\"m3\":{\"active\":[\"0_1\"],\"standby\":[\"1_0\"]}}"), 200, "stateless task 1_0 given as standby to 'm3'");
        assertFallsBack(answer("{\"m1\":{\"active\":[\"0_0\"]},\"m3\":{\"active\":[\"0_1\"]}}"), 200,
            "task 1_0 has no active member");
        assertFallsBack(answer("{\"m9\":{\"active\":[]}}"), 200, "member 'm9' is not in the group");
        assertFallsBack(answer("{\"m1\":{\"active\":[\"0_7\"]}}"), 200, "task 0_7 (members.m1.active) is not a task");
        assertFallsBack("{\"format\":\"kassign/v1\",\"assignment\":{}}", 200, "no per-member \"members\" object");
    }

    @Test
    void fallsBackOnHttp500AndWhenTheServiceIsDown() throws Exception {
        assertFallsBack("{\"error\":\"boom\",\"path\":null}", 500, "HTTP 500 from http://127.0.0.1:");
        KassignStreamsTaskAssignor assignor = new KassignStreamsTaskAssignor();
        String url = StubService.refusedUrl();
        assignor.configure(Map.of(KassignConfig.URL_CONFIG, url, KassignConfig.DEADLINE_CONFIG, "10000"));
        GroupAssignment result = assignor.assign(group(), TOPOLOGY);
        assertEquals(new StickyTaskAssignor().assign(group(), TOPOLOGY).members(), result.members());
        assertTrue(assignor.lastOutcome().reason().startsWith("cannot connect to " + url));
    }

    @Test
    void neverWaitsPastTheDeadline() throws Exception {
        try (StubService service = new StubService()) {
            service.body = GOOD;
            KassignStreamsTaskAssignor assignor = new KassignStreamsTaskAssignor();
            assignor.configure(service.config(250));
            assignor.assign(group(), TOPOLOGY);
            service.sleepMs = 5000;
            long start = System.nanoTime();
            GroupAssignment result = assignor.assign(group(), TOPOLOGY);
            long ms = (System.nanoTime() - start) / 1_000_000;
            // the service sleeps 5 s: well under that proves the cut; the margin absorbs a loaded machine
            assertTrue(ms < 250 + 2000, "took " + ms + " ms with a deadline of 250 ms");
            assertEquals(new StickyTaskAssignor().assign(group(), TOPOLOGY).members(), result.members());
            assertEquals("no answer from " + service.url() + " within the deadline of 250 ms",
                assignor.lastOutcome().reason());
        }
    }

    @Test
    void warmupsAreStandbysAndAProcessHoldsATaskOnce() {
        // m1 and m2 share a process: m2's standby and warm-up of 0_0 (which m1 runs) are dropped, its warm-up
        // of 0_1 is a standby; an offset without an end offset is an unknown lag (null); a task of a
        // subtopology the topology no longer has (7_0) is left out.
        Map<String, MemberMetadataAndStateImpl> members = new LinkedHashMap<>();
        members.put("m1", member(P1, Optional.empty(), Map.of("0", Set.of(0)), Map.of(), Map.of(), Map.of()));
        members.put("m2", new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(), P1, Map.of(),
            Map.of("7", Set.of(0)), Map.of("0", Set.of(0)), Map.of("0", Set.of(0, 1)), Map.of("0", Map.of(1, 7L)),
            Map.of()));
        GroupSpecImpl spec = new GroupSpecImpl(members, new AssignmentConfigsImpl(1, List.of()));
        assertEquals("{\"format\":\"kassign/v1\",\"protocol\":\"streams\",\"tasks\":["
            + "{\"id\":\"0_0\",\"stateful\":true},{\"id\":\"0_1\",\"stateful\":true},"
            + "{\"id\":\"1_0\",\"stateful\":false}],\"clients\":["
            + "{\"id\":\"" + P1 + "\",\"process_id\":\"" + P1 + "\",\"lags\":{\"0_1\":null},\"members\":["
            + "{\"id\":\"m1\",\"active\":[\"0_0\"],\"standby\":[]},"
            + "{\"id\":\"m2\",\"active\":[],\"standby\":[\"0_1\"],\"task_offsets\":{\"0_1\":7}}]}],"
            + "\"config\":{\"num_standby_replicas\":1,\"active_on_caught_up\":false}}",
            Json.write(KassignStreamsTaskAssignor.translate(spec, TOPOLOGY).instance()));
    }
}
