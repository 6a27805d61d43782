package dev.kassign.plugins;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plug-ins against a running {@code kassign serve} (its URL in the system property
 * {@code kassign.service.test.url}, e.g. {@code mvn test -Dkassign.service.test.url=http://127.0.0.1:8736}):
 * the service accepts each plug-in's request, and its answer passes the plug-in's checks in time.
 */
@EnabledIfSystemProperty(named = "kassign.service.test.url", matches = ".+")
class ServiceTest {

    static Map<String, Object> config() {
        return Map.of(KassignConfig.URL_CONFIG, System.getProperty("kassign.service.test.url"),
            KassignConfig.DEADLINE_CONFIG, "5000");
    }

    @Test
    void consumerGroupAssignor() {
        KassignConsumerGroupAssignor assignor = new KassignConsumerGroupAssignor();
        assignor.configure(config());
        GroupAssignment result = assignor.assign(KassignConsumerGroupAssignorTest.group(),
            KassignConsumerGroupAssignorTest.DESCRIBER);
        assertFalse(assignor.lastOutcome().fallback(), assignor.lastOutcome().reason());
        assertEquals("optimal", assignor.lastOutcome().status());
        GroupAssignment uniform = new UniformAssignor().assign(KassignConsumerGroupAssignorTest.group(),
            KassignConsumerGroupAssignorTest.DESCRIBER);
        assertTrue(RealEngineTest.maxLoad(result) <= RealEngineTest.maxLoad(uniform));
    }

    @Test
    void streamsTaskAssignor() throws Exception {
        KassignStreamsTaskAssignor assignor = new KassignStreamsTaskAssignor();
        assignor.configure(config());
        var result = assignor.assign(KassignStreamsTaskAssignorTest.group(), KassignStreamsTaskAssignorTest.TOPOLOGY);
        assertFalse(assignor.lastOutcome().fallback(), assignor.lastOutcome().reason());
        assertEquals("optimal", assignor.lastOutcome().status());
        var expected = KassignStreamsTaskAssignor.read((Map<?, ?>) Json.parse(KassignStreamsTaskAssignorTest.GOOD),
            KassignStreamsTaskAssignor.translate(KassignStreamsTaskAssignorTest.group(),
                KassignStreamsTaskAssignorTest.TOPOLOGY));
        assertEquals(expected.members(), result.members());
    }

    @Test
    void classicConsumerAssignor() {
        KassignConsumerAssignor assignor = new KassignConsumerAssignor();
        assignor.configure(config());
        ConsumerPartitionAssignor.GroupAssignment result = assignor.assign(KassignConsumerAssignorTest.CLUSTER,
            KassignConsumerAssignorTest.group());
        assertFalse(assignor.lastOutcome().fallback(), assignor.lastOutcome().reason());
        assertEquals("optimal", assignor.lastOutcome().status());
        KassignConsumerAssignorTest.assertCooperative(KassignConsumerAssignorTest.group(), result);
    }
}
