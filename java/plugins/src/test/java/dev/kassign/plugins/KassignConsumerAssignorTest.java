package dev.kassign.plugins;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.RebalanceProtocol;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KassignConsumerAssignorTest {

    static final Node N0 = new Node(0, "b0", 9092, "r1");
    static final Node N1 = new Node(1, "b1", 9092, "r2");
    static final Uuid ORDERS_ID = new Uuid(3L, 3L);

    static PartitionInfo partition(String topic, int p, Node... replicas) {
        return new PartitionInfo(topic, p, replicas[0], replicas, replicas);
    }

    /** orders: 3 partitions (replicas on r1+r2, r2, r1), with a topic id; payments: 2 partitions on r2. */
    static final Cluster CLUSTER = new Cluster("c", List.of(N0, N1), List.of(
        partition("orders", 0, N0, N1), partition("orders", 1, N1), partition("orders", 2, N0),
        partition("payments", 0, N1), partition("payments", 1, N1)),
        Set.of(), Set.of(), Set.of(), N0, Map.of("orders", ORDERS_ID));

    /** A (rack r1, generation 5) owns all of orders; B joins (no generation yet) subscribing to orders. */
    static GroupSubscription group() {
        Map<String, Subscription> subs = new LinkedHashMap<>();
        subs.put("A", new Subscription(List.of("payments", "orders"), null,
            List.of(new TopicPartition("orders", 2), new TopicPartition("orders", 0), new TopicPartition("orders", 1)),
            5, Optional.of("r1")));
        subs.put("B", new Subscription(List.of("orders", "missing"), null, List.of(), -1, Optional.empty()));
        return new GroupSubscription(subs);
    }

    static final String INSTANCE = "{\"format\":\"kassign/v1\",\"protocol\":\"consumer\",\"topics\":{"
        + "\"orders\":{\"partitions\":3,\"id\":\"AAAAAAAAAAMAAAAAAAAAAw\",\"racks\":[[\"r1\",\"r2\"],[\"r2\"],[\"r1\"]]},"
        + "\"payments\":{\"partitions\":2,\"racks\":[[\"r2\"],[\"r2\"]]}},"
        + "\"members\":[{\"id\":\"A\",\"topics\":[\"orders\",\"payments\"],\"owned\":{\"orders\":[0,1,2]},"
        + "\"generation\":5,\"rack\":\"r1\"},{\"id\":\"B\",\"topics\":[\"orders\"]}]}";

    static String answer(String assignment) {
        return "{\"format\":\"kassign/v1\",\"assignor\":\"optimal\",\"assignment\":" + assignment
            + ",\"stats\":{\"status\":\"optimal\"},\"service\":{\"fallback\":false,\"reason\":null}}";
    }

    /** What {@code kassign assign -a optimal} answers for INSTANCE: B takes orders-1 and orders-2 from A. */
    static final String GOOD = answer("{\"A\":{\"orders\":[0],\"payments\":[0,1]},\"B\":{\"orders\":[1,2]}}");

    static Map<String, List<TopicPartition>> lists(GroupAssignment a) {
        Map<String, List<TopicPartition>> out = new HashMap<>();
        a.groupAssignment().forEach((m, x) -> out.put(m, x.partitions()));
        return out;
    }

    /** The consumer's own check for a cooperative assignor: nothing added to one member that another revokes. */
    static void assertCooperative(GroupSubscription group, GroupAssignment a) {
        Set<TopicPartition> added = new HashSet<>();
        Set<TopicPartition> revoked = new HashSet<>();
        a.groupAssignment().forEach((m, x) -> {
            Set<TopicPartition> owned = new HashSet<>(group.groupSubscription().get(m).ownedPartitions());
            for (TopicPartition tp : x.partitions()) {
                if (!owned.contains(tp)) {
                    added.add(tp);
                }
            }
            owned.removeAll(x.partitions());
            revoked.addAll(owned);
        });
        added.retainAll(revoked);
        assertEquals(Set.of(), added, "added while still owned elsewhere");
    }

    @Test
    void speaksBothProtocols() {
        assertEquals(List.of(RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER),
            new KassignConsumerAssignor().supportedProtocols());
        assertEquals("kassign", new KassignConsumerAssignor().name());
    }

    @Test
    void translatesTheGroupToKassignsFormat() {
        assertEquals(INSTANCE, Json.write(KassignConsumerAssignor.translate(CLUSTER, group()).instance()));
    }

    @Test
    void withholdsAPartitionChangingOwnerUntilItIsRevoked() throws Exception {
        try (StubService service = new StubService()) {
            service.body = GOOD;
            KassignConsumerAssignor assignor = new KassignConsumerAssignor();
            assignor.configure(service.config(10000));
            GroupSubscription group = group();
            GroupAssignment first = assignor.assign(CLUSTER, group);
            TopicPartition o0 = new TopicPartition("orders", 0);
            TopicPartition o1 = new TopicPartition("orders", 1);
            TopicPartition o2 = new TopicPartition("orders", 2);
            TopicPartition p0 = new TopicPartition("payments", 0);
            TopicPartition p1 = new TopicPartition("payments", 1);
            // Round 1: A keeps orders-0 and gets payments, revokes orders-1 and orders-2; B gets nothing yet.
            assertEquals(Map.of("A", List.of(o0, p0, p1), "B", List.of()), lists(first));
            assertEquals(2, assignor.lastWithheld());
            assertCooperative(group, first);
            // Round 2 (A rejoined without orders-1 and orders-2): the same answer is given in full.
            Map<String, Subscription> subs = new LinkedHashMap<>();
            subs.put("A", new Subscription(List.of("payments", "orders"), null, List.of(o0, p0, p1), 6,
                Optional.of("r1")));
            subs.put("B", new Subscription(List.of("orders", "missing"), null, List.of(), 6, Optional.empty()));
            GroupSubscription second = new GroupSubscription(subs);
            GroupAssignment next = assignor.assign(CLUSTER, second);
            assertEquals(Map.of("A", List.of(o0, p0, p1), "B", List.of(o1, o2)), lists(next));
            assertEquals(0, assignor.lastWithheld());
            assertCooperative(second, next);
            assertFalse(assignor.lastOutcome().fallback());
        }
    }

    @Test
    void withholdingKeepsAPartitionClaimedByItsNewOwnerToo() {
        // Both claim orders-0 (say, A at an older generation); it goes to B, which claims it: B keeps it, A revokes.
        TopicPartition o0 = new TopicPartition("orders", 0);
        Map<String, Subscription> subs = new LinkedHashMap<>();
        subs.put("A", new Subscription(List.of("orders"), null, List.of(o0), 4, Optional.empty()));
        subs.put("B", new Subscription(List.of("orders"), null, List.of(o0), 5, Optional.empty()));
        GroupSubscription g = new GroupSubscription(subs);
        assertEquals(Map.of("A", List.of(), "B", List.of(o0)),
            KassignConsumerAssignor.withhold(Map.of("A", List.of(), "B", List.of(o0)), g));
    }

    static void assertFallsBack(String body, int status, String reason) throws Exception {
        try (StubService service = new StubService()) {
            service.body = body;
            service.status = status;
            KassignConsumerAssignor assignor = new KassignConsumerAssignor();
            assignor.configure(service.config(10000));
            GroupAssignment result = assignor.assign(CLUSTER, group());
            assertEquals(lists(new CooperativeStickyAssignor().assign(CLUSTER, group())), lists(result));
            assertTrue(assignor.lastOutcome().fallback());
            assertTrue(assignor.lastOutcome().reason().contains(reason), assignor.lastOutcome().reason());
        }
    }

    @Test
    void rejectsInvalidAnswers() throws Exception {
        assertFallsBack(answer("{\"A\":{\"orders\":[0,1],\"payments\":[0,1]},\"B\":{\"orders\":[1,2]}}"), 200,
            "partition orders-1 is assigned twice (to 'A' and 'B')");
        assertFallsBack(answer("{\"A\":{\"orders\":[0,1]},\"B\":{\"orders\":[2],\"payments\":[0,1]}}"), 200,
            "member 'B' got topic 'payments' it does not subscribe to");
        assertFallsBack(answer("{\"A\":{\"orders\":[0,1],\"payments\":[0]},\"B\":{\"orders\":[2]}}"), 200,
            "partition payments-1 is not assigned");
        assertFallsBack(answer("{\"A\":{\"orders\":[0,1],\"payments\":[0,1]},\"B\":{\"orders\":[\"2\"]}}"), 200,
            "partition 2 of topic 'orders' (member 'B') is not one of its 3 partitions");
        assertFallsBack("{\"format\":\"kassign/v2\",\"assignment\":{}}", 200, "format kassign/v2");
    }

    @Test
    void fallsBackOnHttp500AndWhenTheServiceIsDown() throws Exception {
        assertFallsBack("{\"error\":\"boom\",\"path\":null}", 500, "HTTP 500 from http://127.0.0.1:");
        assertFallsBack("<html>oops</html>", 502, "HTTP 502 from http://127.0.0.1:");
        KassignConsumerAssignor assignor = new KassignConsumerAssignor();
        String url = StubService.refusedUrl();
        assignor.configure(Map.of(KassignConfig.URL_CONFIG, url, KassignConfig.DEADLINE_CONFIG, "10000"));
        GroupAssignment result = assignor.assign(CLUSTER, group());
        assertEquals(lists(new CooperativeStickyAssignor().assign(CLUSTER, group())), lists(result));
        assertTrue(assignor.lastOutcome().reason().startsWith("cannot connect to " + url));
        assertCooperative(group(), result);
    }

    @Test
    void neverWaitsPastTheDeadline() throws Exception {
        try (StubService service = new StubService()) {
            service.body = GOOD;
            KassignConsumerAssignor assignor = new KassignConsumerAssignor();
            assignor.configure(service.config(200));
            assignor.assign(CLUSTER, group());
            service.sleepMs = 5000;
            long start = System.nanoTime();
            GroupAssignment result = assignor.assign(CLUSTER, group());
            long ms = (System.nanoTime() - start) / 1_000_000;
            // the service sleeps 5 s: well under that proves the cut; the margin absorbs a loaded machine
            assertTrue(ms < 200 + 2000, "took " + ms + " ms with a deadline of 200 ms");
            assertEquals(lists(new CooperativeStickyAssignor().assign(CLUSTER, group())), lists(result));
            assertEquals("no answer from " + service.url() + " within the deadline of 200 ms",
                assignor.lastOutcome().reason());
        }
    }

    @Test
    void readsItsSettingsAndRefusesBadOnes() {
        KassignConfig c = KassignConfig.from(Map.of("kassign.service.url", "http://svc:9000/", "kassign.deadline.ms",
            "500", "kassign.service.margin.ms", "100"));
        assertEquals("http://svc:9000", c.url().toString());
        assertEquals(500, c.deadlineMs());
        assertEquals(400, c.serviceMs());
        assertEquals(50, KassignConfig.from(Map.of("kassign.deadline.ms", "60")).serviceMs());
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> KassignConfig.from(Map.of("kassign.deadline.ms", "soon")));
        assertEquals("kassign.deadline.ms: expected an integer (milliseconds), got 'soon'", e.getMessage());
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> KassignConfig.from(Map.of("kassign.service.url", "ftp://x")));
        assertEquals("kassign.service.url: expected an http:// or https:// URL, got ftp://x", e.getMessage());
    }

    @Test
    void runsOnAConsumersClasspathWithoutBrokerJars() throws Exception {
        // A Java consumer has kafka-clients and slf4j-api, not the group coordinator: the client-side assignor
        // must load, assign and fall back with nothing else.
        StringBuilder cp = new StringBuilder(System.getProperty("user.dir") + "/target/classes"
            + java.io.File.pathSeparator + System.getProperty("user.dir") + "/target/test-classes");
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            String name = new java.io.File(entry).getName();
            if (name.startsWith("kafka-clients-") || name.startsWith("slf4j-api-")) {
                cp.append(java.io.File.pathSeparator).append(entry);
            }
        }
        String url = StubService.refusedUrl();
        Process p = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-cp", cp.toString(),
            "dev.kassign.plugins.ClientClasspathMain", url).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        assertTrue(out.contains("[t-0, t-1]\ncannot connect to " + url), out);
        assertFalse(cp.toString().contains("group-coordinator"), cp.toString());
    }
}
