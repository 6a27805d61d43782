package dev.kassign.clients;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.Stores;

/**
 * Scripted Apache Kafka group members for kassign's real-broker tests, driven over stdin/stdout JSON lines.
 *
 * <p>One request per line on stdin, one answer per line on stdout ({@code {"ok": true, ...}} or
 * {@code {"ok": false, "error": "..."}}):
 * <ul>
 *   <li>{@code {"op": "consumer", "name": N, "bootstrap": B, "group": G, "topics": [...], "config": {...}}}:
 *       a {@link KafkaConsumer} named N (its {@code client.id}) polls in its own thread; {@code config} is
 *       any consumer setting ({@code group.protocol}, {@code partition.assignment.strategy},
 *       {@code group.remote.assignor}, ...).</li>
 *   <li>{@code {"op": "streams", "name": N, "bootstrap": B, "app": A, "input": T, "config": {...}}}: a Kafka
 *       Streams instance of application A counting the records of T per key in an in-memory store.</li>
 *   <li>{@code {"op": "stop", "name": N}}: closes that member (a consumer leaves its group); answers once
 *       it is closed.</li>
 *   <li>{@code {"op": "state"}}: every running member as it last saw itself (consumers: member id,
 *       generation or epoch, assigned partitions; Streams: its state and each thread's active and standby
 *       tasks).</li>
 *   <li>{@code {"op": "describe_consumer_group", "bootstrap": B, "group": G}}: the group as Kafka's
 *       {@code Admin.describeConsumerGroups} reads it (KIP-848 groups: ConsumerGroupDescribe): its members with
 *       their epochs, current and target assignments.</li>
 *   <li>{@code {"op": "describe_streams_group", "bootstrap": B, "group": G}}: the KIP-1071 streams group as
 *       Kafka's {@code Admin.describeStreamsGroups} reads it (StreamsGroupDescribe): its members with their
 *       process ids, current and target assignments and task offsets, and its subtopologies.</li>
 *   <li>{@code {"op": "set_group_config", "bootstrap": B, "group": G, "config": {...}}}: sets group configs
 *       (e.g. {@code streams.assignor.name}) with Kafka's {@code Admin.incrementalAlterConfigs} on the group
 *       resource, as {@code kafka-configs.sh --entity-type groups --add-config} does.</li>
 *   <li>{@code {"op": "quit"}}: closes every member and exits.</li>
 * </ul>
 */
public final class Driver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Map<String, Member> members = new LinkedHashMap<>();

    /** A running group member. */
    private interface Member {
        ObjectNode state();

        void close() throws InterruptedException;
    }

    /** A consumer polling in its own thread; what it holds is read on that thread after each poll. */
    private static final class ConsumerMember implements Member, Runnable {
        private final String name;
        private final Properties props;
        private final List<String> topics;
        private final Thread thread;
        private volatile boolean halt;
        private volatile ObjectNode snapshot;
        private volatile String error;

        ConsumerMember(String name, Properties props, List<String> topics) {
            this.name = name;
            this.props = props;
            this.topics = topics;
            this.snapshot = JSON.createObjectNode().put("kind", "consumer").put("member_id", "");
            this.thread = new Thread(this, "member-" + name);
            this.thread.setDaemon(true);
            this.thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<byte[], byte[]> consumer =
                         new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                consumer.subscribe(topics);
                while (!halt) {
                    consumer.poll(Duration.ofMillis(100));
                    snapshot = snapshot(consumer);
                }
            } catch (RuntimeException e) {
                error = e.toString();
            }
        }

        private ObjectNode snapshot(KafkaConsumer<byte[], byte[]> consumer) {
            ConsumerGroupMetadata meta = consumer.groupMetadata();
            ObjectNode out = JSON.createObjectNode().put("kind", "consumer").put("member_id", meta.memberId())
                    .put("generation", meta.generationId());
            ArrayNode held = out.putArray("assigned");
            List<TopicPartition> tps = new ArrayList<>(consumer.assignment());
            tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            for (TopicPartition tp : tps) {
                held.addArray().add(tp.topic()).add(tp.partition());
            }
            return out;
        }

        @Override
        public ObjectNode state() {
            ObjectNode out = snapshot.deepCopy();
            if (error != null) {
                out.put("error", error);
            }
            return out;
        }

        @Override
        public void close() throws InterruptedException {
            halt = true;
            thread.join(60_000);
            if (thread.isAlive()) {
                throw new IllegalStateException(name + " did not close within 60 s");
            }
        }
    }

    /** A Kafka Streams instance: count per key of one input topic, in an in-memory store. */
    private static final class StreamsMember implements Member {
        private final KafkaStreams streams;
        private volatile String error;

        StreamsMember(Properties props, String input) {
            StreamsBuilder builder = new StreamsBuilder();
            builder.stream(input, Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
                    .groupByKey()
                    .count(Materialized.<Bytes, Long>as(
                            Stores.inMemoryKeyValueStore("counts")));
            streams = new KafkaStreams(builder.build(), props);
            streams.setUncaughtExceptionHandler(e -> {
                error = e.toString();
                return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                        .SHUTDOWN_CLIENT;
            });
            streams.start();
        }

        @Override
        public ObjectNode state() {
            ObjectNode out = JSON.createObjectNode().put("kind", "streams").put("state", streams.state().name());
            ArrayNode threads = out.putArray("threads");
            List<ThreadMetadata> metas = new ArrayList<>(streams.metadataForLocalThreads());
            metas.sort(Comparator.comparing(ThreadMetadata::threadName));
            for (ThreadMetadata t : metas) {
                ObjectNode th = threads.addObject().put("name", t.threadName())
                        .put("consumer_client_id", t.consumerClientId()).put("state", t.threadState());
                tasks(th.putArray("active"), t.activeTasks());
                tasks(th.putArray("standby"), t.standbyTasks());
            }
            if (error != null) {
                out.put("error", error);
            }
            return out;
        }

        private static void tasks(ArrayNode into, Set<TaskMetadata> tasks) {
            tasks.stream().map(m -> m.taskId().toString()).sorted().forEach(into::add);
        }

        @Override
        public void close() {
            if (!streams.close(Duration.ofSeconds(60))) {
                throw new IllegalStateException("Kafka Streams did not close within 60 s");
            }
        }
    }

    private static Properties properties(JsonNode config) {
        Properties props = new Properties();
        if (config != null) {
            for (Iterator<Map.Entry<String, JsonNode>> it = config.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                props.put(e.getKey(), e.getValue().asText());
            }
        }
        return props;
    }

    private ObjectNode handle(JsonNode req) throws Exception {
        String op = req.path("op").asText();
        String name = req.path("name").asText();
        ObjectNode ok = JSON.createObjectNode().put("ok", true);
        switch (op) {
            case "consumer": {
                requireNew(name);
                Properties props = properties(req.get("config"));
                props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, req.path("bootstrap").asText());
                props.put(ConsumerConfig.GROUP_ID_CONFIG, req.path("group").asText());
                props.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, name);
                props.putIfAbsent(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                props.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                List<String> topics = new ArrayList<>();
                req.path("topics").forEach(t -> topics.add(t.asText()));
                members.put(name, new ConsumerMember(name, props, topics));
                return ok;
            }
            case "streams": {
                requireNew(name);
                Properties props = properties(req.get("config"));
                props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, req.path("bootstrap").asText());
                props.put(StreamsConfig.APPLICATION_ID_CONFIG, req.path("app").asText());
                props.putIfAbsent(StreamsConfig.CLIENT_ID_CONFIG, name);
                props.putIfAbsent(StreamsConfig.STATE_DIR_CONFIG,
                        Files.createTempDirectory("kassign-streams-" + name).toString());
                members.put(name, new StreamsMember(props, req.path("input").asText()));
                return ok;
            }
            case "stop": {
                Member m = members.remove(name);
                if (m == null) {
                    throw new IllegalArgumentException("no member named " + name);
                }
                m.close();
                return ok;
            }
            case "state": {
                ObjectNode all = ok.putObject("members");
                for (Map.Entry<String, Member> e : members.entrySet()) {
                    all.set(e.getKey(), e.getValue().state());
                }
                return ok;
            }
            case "describe_consumer_group":
                ok.set("group", describeConsumerGroup(req.path("bootstrap").asText(), req.path("group").asText()));
                return ok;
            case "set_group_config":
                setGroupConfig(req.path("bootstrap").asText(), req.path("group").asText(), req.get("config"));
                return ok;
            case "describe_streams_group":
                ok.set("group", describeStreamsGroup(req.path("bootstrap").asText(), req.path("group").asText()));
                return ok;
            default:
                throw new IllegalArgumentException("unknown op " + JSON.writeValueAsString(op));
        }
    }

    private static ObjectNode describeConsumerGroup(String bootstrap, String group) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            ObjectNode out = JSON.createObjectNode().put("state", d.groupState().toString())
                    .put("type", d.type().toString()).put("assignor", d.partitionAssignor());
            ArrayNode members = out.putArray("members");
            for (MemberDescription m : d.members()) {
                ObjectNode o = members.addObject().put("member_id", m.consumerId()).put("client_id", m.clientId());
                m.memberEpoch().ifPresent(e -> o.put("member_epoch", e));
                partitions(o.putArray("assignment"), m.assignment());
                m.targetAssignment().ifPresent(t -> partitions(o.putArray("target_assignment"), t));
            }
            return out;
        }
    }

    private static void partitions(ArrayNode into, MemberAssignment a) {
        List<TopicPartition> tps = new ArrayList<>(a.topicPartitions());
        tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        for (TopicPartition tp : tps) {
            into.addArray().add(tp.topic()).add(tp.partition());
        }
    }

    private static ObjectNode describeStreamsGroup(String bootstrap, String group) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            StreamsGroupDescription d = admin.describeStreamsGroups(List.of(group)).all().get().get(group);
            ObjectNode out = JSON.createObjectNode().put("state", d.groupState().toString())
                    .put("group_epoch", d.groupEpoch()).put("target_assignment_epoch", d.targetAssignmentEpoch());
            ArrayNode subs = out.putArray("subtopologies");
            for (StreamsGroupSubtopologyDescription st : d.subtopologies()) {
                ObjectNode o = subs.addObject().put("id", st.subtopologyId());
                st.sourceTopics().forEach(o.putArray("source_topics")::add);
                ObjectNode changelogs = o.putObject("state_changelog_topics");
                st.stateChangelogTopics().forEach((t, info) -> changelogs.put(t, info.partitions()));
            }
            ArrayNode members = out.putArray("members");
            for (StreamsGroupMemberDescription m : d.members()) {
                ObjectNode o = members.addObject().put("member_id", m.memberId()).put("member_epoch", m.memberEpoch())
                        .put("process_id", m.processId()).put("client_id", m.clientId());
                m.userEndpoint().ifPresent(e -> o.put("user_endpoint", e.host() + ":" + e.port()));
                assignment(o.putObject("assignment"), m.assignment());
                assignment(o.putObject("target_assignment"), m.targetAssignment());
                ObjectNode offsets = o.putObject("task_offsets");
                m.taskOffsets().forEach(t -> offsets.put(t.subtopologyId() + "_" + t.partition(), t.offset()));
            }
            return out;
        }
    }

    private static void setGroupConfig(String bootstrap, String group, JsonNode config) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        List<AlterConfigOp> ops = new ArrayList<>();
        properties(config).forEach((k, v) ->
                ops.add(new AlterConfigOp(new ConfigEntry((String) k, (String) v), AlterConfigOp.OpType.SET)));
        try (Admin admin = Admin.create(props)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
    }

    private static void assignment(ObjectNode into, StreamsGroupMemberAssignment a) {
        tasks(into.putArray("active"), a.activeTasks());
        tasks(into.putArray("standby"), a.standbyTasks());
        tasks(into.putArray("warmup"), a.warmupTasks());
    }

    private static void tasks(ArrayNode into, List<StreamsGroupMemberAssignment.TaskIds> ids) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds t : ids) {
            for (int p : t.partitions()) {
                out.add(t.subtopologyId() + "_" + p);
            }
        }
        out.sort(null);
        out.forEach(into::add);
    }

    private void requireNew(String name) {
        if (name.isEmpty() || members.containsKey(name)) {
            throw new IllegalArgumentException("member name empty or already running: " + name);
        }
    }

    private void closeAll() {
        for (Member m : members.values()) {
            try {
                m.close();
            } catch (Exception e) {
                System.err.println("closing a member: " + e);
            }
        }
        members.clear();
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
                StandardCharsets.UTF_8);
        System.setOut(System.err); // anything else that prints goes to stderr: stdout carries answers only
        Driver driver = new Driver();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                JsonNode req = JSON.readTree(line);
                if ("quit".equals(req.path("op").asText())) {
                    break;
                }
                answer = driver.handle(req);
            } catch (Exception e) {
                answer = JSON.createObjectNode().put("ok", false).put("error", e.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
        driver.closeAll();
        out.println(JSON.writeValueAsString(JSON.createObjectNode().put("ok", true).put("quit", true)));
        System.exit(0);
    }
}
