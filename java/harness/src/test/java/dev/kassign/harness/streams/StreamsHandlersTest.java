package dev.kassign.harness.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kassign.harness.Json;
import org.junit.jupiter.api.Test;

/**
 * Exact cases of the Streams handlers on the compile classpath's Kafka (4.4.0). Each expected answer follows
 * from Kafka's rules by hand (stated per case); the fixture files check the rest (java/harness/README.md).
 */
class StreamsHandlersTest {
    private static final String P1 = "00000000-0000-0000-0000-000000000001";
    private static final String P2 = "00000000-0000-0000-0000-000000000002";
    private static final String P3 = "00000000-0000-0000-0000-000000000003";

    private static JsonNode json(String text) throws Exception {
        return Json.MAPPER.readTree(text.replace('\'', '"'));
    }

    private static JsonNode request(String assignor, String instance) throws Exception {
        ObjectNode r = Json.object();
        r.put("assignor", assignor);
        r.set("instance", json(instance));
        return r;
    }

    @Test
    void highAvailabilityDealsStatefulTasksRoundRobinInProcessIdOrder() throws Exception {
        // No state anywhere: every lag is the whole end offset, no client is better placed, nothing moves.
        JsonNode out = new ClassicTaskAssignors().handle(request("high-availability", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0'}, {'id': '0_1'}, {'id': '0_2'}, {'id': '0_3'}],
             'clients': [{'id': 'b', 'process_id': '%s'}, {'id': 'a', 'process_id': '%s'}]}
            """.formatted(P2, P1)));
        assertEquals(json("""
            {'assignment': {'b': {'active': ['0_1', '0_3'], 'standby': []},
                            'a': {'active': ['0_0', '0_2'], 'standby': []}},
             'probing_rebalance': false, 'rack_aware': false}"""), out);
    }

    @Test
    void highAvailabilityMovesAnActiveBackToTheCaughtUpClientAndWarmsUpTheOther() throws Exception {
        // Balanced: 0_0 on a (lowest process id), 0_1 on b. a has no state for 0_0 while b ran it: the active
        // goes back to b and a keeps a warm-up replica; a probing rebalance follows.
        JsonNode out = new ClassicTaskAssignors().handle(request("high-availability", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0'}, {'id': '0_1'}],
             'clients': [{'id': 'a', 'process_id': '%s'},
                         {'id': 'b', 'process_id': '%s', 'active': ['0_0', '0_1']}]}
            """.formatted(P1, P2)));
        assertEquals(json("""
            {'assignment': {'a': {'active': [], 'standby': ['0_0']},
                            'b': {'active': ['0_0', '0_1'], 'standby': []}},
             'probing_rebalance': true, 'rack_aware': false}"""), out);
    }

    @Test
    void rackAwareHighAvailabilityPutsEachActiveOnTheRackOfItsSource() throws Exception {
        // Round robin gives 0_0 to a (rack r1) and 0_1 to b (rack r2), both across racks (cost 10 each); the
        // min-cost flow swaps them (cost 1 + 1 for leaving the plain assignment).
        JsonNode out = new ClassicTaskAssignors().handle(request("high-availability", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0', 'source_racks': [['r2']], 'changelog_racks': [['r2']]},
                       {'id': '0_1', 'source_racks': [['r1']], 'changelog_racks': [['r1']]}],
             'clients': [{'id': 'a', 'process_id': '%s', 'rack': 'r1'},
                         {'id': 'b', 'process_id': '%s', 'rack': 'r2'}],
             'config': {'rack_aware_assignment_strategy': 'min_traffic'}}
            """.formatted(P1, P2)));
        assertEquals(json("""
            {'assignment': {'a': {'active': ['0_1'], 'standby': []},
                            'b': {'active': ['0_0'], 'standby': []}},
             'probing_rebalance': false, 'rack_aware': true}"""), out);
    }

    @Test
    void rackAwarenessIsOffWhenAClientHasNoRack() throws Exception {
        JsonNode out = new ClassicTaskAssignors().handle(request("high-availability", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0', 'source_racks': [['r2']]}, {'id': '0_1', 'source_racks': [['r1']]}],
             'clients': [{'id': 'a', 'process_id': '%s', 'rack': 'r1'}, {'id': 'b', 'process_id': '%s'}],
             'config': {'rack_aware_assignment_strategy': 'min_traffic'}}
            """.formatted(P1, P2)));
        assertFalse(out.get("rack_aware").asBoolean());
        assertEquals(json("['0_0']"), out.at("/assignment/a/active"));
    }

    @Test
    void legacyStickyKeepsPreviousActivesAndAsksForNoProbing() throws Exception {
        JsonNode out = new ClassicTaskAssignors().handle(request("sticky-task", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0'}, {'id': '0_1'}],
             'clients': [{'id': 'a', 'process_id': '%s', 'active': ['0_1']},
                         {'id': 'b', 'process_id': '%s', 'active': ['0_0']}],
             'config': {'num_standby_replicas': 1}}
            """.formatted(P1, P2)));
        assertEquals(json("""
            {'assignment': {'a': {'active': ['0_1'], 'standby': ['0_0']},
                            'b': {'active': ['0_0'], 'standby': ['0_1']}},
             'probing_rebalance': false}"""), out);
    }

    private static String kip924(String order) {
        return """
            {'format': 'kassign/v1', 'protocol': 'streams', %s
             'tasks': [{'id': '0_0'}, {'id': '0_1'}],
             'clients': [{'id': 'a', 'process_id': '%s', 'active': ['0_0']},
                         {'id': 'b', 'process_id': '%s', 'active': ['0_1']},
                         {'id': 'c', 'process_id': '%s'}],
             'config': {'num_standby_replicas': 1}}
            """.formatted(order, P1, P2, P3);
    }

    @Test
    void kip924StandbyWalkDecidesWhichTaskTheIdleClientBacksUp() throws Exception {
        // Actives stay (a: 0_0, b: 0_1). The first stateful task walked gets its standby on c, the only
        // client with no task (load 0 wins outright); the walk is the instance's standby_task_order.
        for (String first : new String[] {"0_0", "0_1"}) {
            String second = first.equals("0_0") ? "0_1" : "0_0";
            JsonNode out = new Kip924Assignors().handle(request("kip924-sticky",
                kip924("'standby_task_order': ['" + first + "', '" + second + "'],")));
            assertEquals(json("['0_0']"), out.at("/assignment/a/active"));
            assertEquals(json("['0_1']"), out.at("/assignment/b/active"));
            assertEquals(json("{'active': [], 'standby': ['" + first + "']}"), out.at("/assignment/c"));
            assertEquals(json("['" + first + "', '" + second + "']"), out.get("standby_task_order"));
            assertFalse(out.get("probing_rebalance").asBoolean());
        }
    }

    @Test
    void kip924WithoutAnOrderWalksStatefulTasksInTaskOrder() throws Exception {
        JsonNode out = new Kip924Assignors().handle(request("kip924-sticky", kip924("")));
        assertEquals(json("['0_0', '0_1']"), out.get("standby_task_order"));
        assertEquals(json("{'active': [], 'standby': ['0_0']}"), out.at("/assignment/c"));
    }

    @Test
    void kip924RefusesAStandbyOrderThatIsNotTheStatefulTasks() {
        assertThrows(IllegalArgumentException.class, () -> new Kip924Assignors().handle(
            request("kip924-sticky", kip924("'standby_task_order': ['0_0'],"))));
    }

    @Test
    void serverStickyKeepsActivesAndPutsEachStandbyOnTheOtherProcess() throws Exception {
        // 4.4 API. Each member keeps its current active; each standby can only go to the process without it.
        JsonNode out = new ServerTaskAssignors().handle(request("streams-server-sticky", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0'}, {'id': '0_1'}],
             'clients': [{'id': 'p', 'process_id': '%s', 'members': [{'id': 'm1', 'active': ['0_0']}]},
                         {'id': 'q', 'process_id': '%s', 'members': [{'id': 'm2', 'active': ['0_1']}]}],
             'config': {'num_standby_replicas': 1}}
            """.formatted(P1, P2)));
        assertEquals(json("""
            {'assignment': {'p': {'active': ['0_0'], 'standby': ['0_1']},
                            'q': {'active': ['0_1'], 'standby': ['0_0']}},
             'members': {'m1': {'active': ['0_0'], 'standby': ['0_1']},
                         'm2': {'active': ['0_1'], 'standby': ['0_0']}},
             'probing_rebalance': false}"""), out);
    }

    @Test
    void serverStickyAt44ReadsCurrentTasksNotTheTarget() throws Exception {
        // Target says m1 runs both tasks, but m1 currently owns 0_1 only and m2 still owns 0_0: Kafka 4.4
        // keeps what each member owns.
        JsonNode out = new ServerTaskAssignors().handle(request("streams-server-sticky", """
            {'format': 'kassign/v1', 'protocol': 'streams',
             'tasks': [{'id': '0_0', 'stateful': false}, {'id': '0_1', 'stateful': false}],
             'clients': [{'id': 'p', 'process_id': '%s',
                          'members': [{'id': 'm1', 'active': ['0_0', '0_1'], 'current_active': ['0_1']}]},
                         {'id': 'q', 'process_id': '%s',
                          'members': [{'id': 'm2', 'current_active': ['0_0']}]}]}
            """.formatted(P1, P2)));
        assertEquals(json("{'active': ['0_1'], 'standby': []}"), out.at("/members/m1"));
        assertEquals(json("{'active': ['0_0'], 'standby': []}"), out.at("/members/m2"));
    }

    @Test
    void serverStickyNeedsMembers() {
        assertThrows(IllegalArgumentException.class, () -> new ServerTaskAssignors().handle(request(
            "streams-server-sticky", """
            {'format': 'kassign/v1', 'protocol': 'streams', 'tasks': [{'id': '0_0'}],
             'clients': [{'id': 'p', 'process_id': '%s'}]}""".formatted(P1))));
    }

    @Test
    void badTaskIdsAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ClassicTaskAssignors()
            .handle(request("sticky-task", """
                {'format': 'kassign/v1', 'protocol': 'streams', 'tasks': [{'id': 'x'}], 'clients': []}""")));
        assertTrue(e.getMessage().contains("instance.tasks[0].id"), e.getMessage());
    }
}
