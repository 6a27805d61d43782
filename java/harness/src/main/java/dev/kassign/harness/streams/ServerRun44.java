package dev.kassign.harness.streams;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.coordinator.group.api.streams.assignor.AssignmentConfigs;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentMetadata;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentState;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;

/** The KIP-1357 half of {@link ServerTaskAssignors} (Kafka 4.4+ classes only). */
final class ServerRun44 {
    private ServerRun44() {
    }

    /** One member as the 4.4 coordinator describes it: its metadata and its current assignment state. */
    private record MemberView(String processId, Optional<String> rackId, Map<String, String> clientTags,
                              Map<String, Set<Integer>> activeTasks, Map<String, Set<Integer>> standbyTasks,
                              Map<String, Map<Integer, Long>> taskOffsets)
            implements MemberAssignmentMetadata, MemberAssignmentState {
        @Override
        public Optional<String> instanceId() {
            return Optional.empty();
        }

        @Override
        public Map<String, Set<Integer>> warmupTasks() {
            return Map.of();
        }

        @Override
        public Map<String, Map<Integer, Long>> taskEndOffsets() {
            return Map.of();
        }
    }

    static Map<String, List<List<String>>> run(StreamsInstance inst, TreeMap<String, int[]> topo) {
        Map<String, MemberView> members = new HashMap<>();
        for (StreamsInstance.Client c : inst.clients) {
            for (StreamsInstance.Member m : ServerTaskAssignors.members(c)) {
                Map<String, Map<Integer, Long>> offsets = new HashMap<>();
                m.taskOffsets().forEach((task, offset) -> {
                    int[] sp = StreamsInstance.parseTaskId(task, "instance.clients[].members[].task_offsets");
                    offsets.computeIfAbsent(String.valueOf(sp[0]), k -> new HashMap<>()).put(sp[1], offset);
                });
                MemberView view = new MemberView(c.processId(), StreamsInstance.rack(c), c.clientTags(),
                    ServerTaskAssignors.compact(m.ownedActive()), ServerTaskAssignors.compact(m.ownedStandby()), offsets);
                if (members.put(m.id(), view) != null) {
                    throw new IllegalArgumentException("instance.clients[].members: duplicate member id " + m.id());
                }
            }
        }
        int standbys = inst.numStandbyReplicas;
        List<String> tags = List.copyOf(inst.rackAwareAssignmentTags);
        AssignmentConfigs configs = new AssignmentConfigs() {
            @Override
            public int numStandbyReplicas() {
                return standbys;
            }

            @Override
            public List<String> rackAwareAssignmentTags() {
                return tags;
            }
        };
        GroupSpec spec = new GroupSpec() {
            @Override
            public Collection<String> memberIds() {
                return members.keySet();
            }

            @Override
            public MemberAssignmentMetadata memberMetadata(String memberId) {
                return require(memberId);
            }

            @Override
            public MemberAssignmentState memberAssignmentState(String memberId) {
                return require(memberId);
            }

            @Override
            public AssignmentConfigs configs() {
                return configs;
            }

            private MemberView require(String memberId) {
                MemberView m = members.get(memberId);
                if (m == null) {
                    throw new IllegalArgumentException("Member Id " + memberId + " not found.");
                }
                return m;
            }
        };
        TopologyDescriber describer = new TopologyDescriber() {
            @Override
            public List<String> subtopologies() {
                return new ArrayList<>(topo.keySet());
            }

            @Override
            public int maxNumInputPartitions(String subtopologyId) {
                return ServerTaskAssignors.subtopology(topo, subtopologyId)[0];
            }

            @Override
            public boolean isStateful(String subtopologyId) {
                return ServerTaskAssignors.subtopology(topo, subtopologyId)[1] == 1;
            }
        };
        GroupAssignment result = new StickyTaskAssignor().assign(spec, describer);
        Map<String, List<List<String>>> out = new HashMap<>();
        for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
            out.put(e.getKey(), List.of(ServerTaskAssignors.expand(e.getValue().activeTasks()),
                ServerTaskAssignors.expand(e.getValue().standbyTasks())));
        }
        return out;
    }
}
