package dev.kassign.plugins;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.utils.Utils;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Run in a JVM whose classpath is a Java consumer's (kafka-clients and slf4j-api, no broker jars): the
 * client-side assignor is created the way the consumer creates it, assigns with the service down, and prints
 * the fallback's answer and the reason.
 */
public final class ClientClasspathMain {

    private ClientClasspathMain() {
    }

    public static void main(String[] args) throws Exception {
        ConsumerPartitionAssignor assignor = Utils.newInstance(
            Class.forName("dev.kassign.plugins.KassignConsumerAssignor"), ConsumerPartitionAssignor.class);
        ((org.apache.kafka.common.Configurable) assignor).configure(Map.of("kassign.service.url", args[0],
            "kassign.deadline.ms", "10000"));
        Node n = new Node(0, "b0", 9092);
        Cluster cluster = new Cluster("c", List.of(n), List.of(new PartitionInfo("t", 0, n, new Node[] {n},
            new Node[] {n}), new PartitionInfo("t", 1, n, new Node[] {n}, new Node[] {n})), Set.of(), Set.of());
        var out = assignor.assign(cluster, new GroupSubscription(Map.of("a", new Subscription(List.of("t")))));
        System.out.println(out.groupAssignment().get("a").partitions());
        System.out.println(((KassignConsumerAssignor) assignor).lastOutcome().reason());
    }
}
