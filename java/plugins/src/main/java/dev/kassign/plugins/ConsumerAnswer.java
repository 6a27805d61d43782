package dev.kassign.plugins;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks a consumer-protocol answer of the service against the group it was asked about: every member is a
 * member of the group, every topic one it subscribes to, every partition in range and assigned exactly once,
 * and every partition of a topic with a subscriber assigned.
 */
final class ConsumerAnswer {

    private ConsumerAnswer() {
    }

    /**
     * Validate and read the answer.
     *
     * @param answer        the service's JSON object
     * @param subscriptions member id -> the topic names it subscribes to (every member of the group)
     * @param partitions    topic name -> partition count (every topic of the instance)
     * @return member id -> topic -> partitions (every member, also with nothing)
     * @throws KassignException naming the first problem
     */
    static Map<String, Map<String, Set<Integer>>> read(
        Map<?, ?> answer,
        Map<String, Set<String>> subscriptions,
        Map<String, Integer> partitions
    ) throws KassignException {
        if (!(answer.get("assignment") instanceof Map<?, ?> assignment)) {
            throw invalid("no \"assignment\" object");
        }
        Map<String, Map<String, Set<Integer>>> out = new LinkedHashMap<>();
        for (String member : subscriptions.keySet()) {
            out.put(member, new TreeMap<>());
        }
        Map<String, Map<Integer, String>> owner = new HashMap<>();
        for (Map.Entry<?, ?> e : assignment.entrySet()) {
            String member = String.valueOf(e.getKey());
            if (!subscriptions.containsKey(member)) {
                throw invalid("member '" + member + "' is not in the group");
            }
            if (!(e.getValue() instanceof Map<?, ?> topics)) {
                throw invalid("assignment." + member + " is not an object");
            }
            for (Map.Entry<?, ?> t : topics.entrySet()) {
                String topic = String.valueOf(t.getKey());
                Integer count = partitions.get(topic);
                if (count == null) {
                    throw invalid("topic '" + topic + "' (member '" + member + "') is not in the group's topics");
                }
                if (!subscriptions.get(member).contains(topic)) {
                    throw invalid("member '" + member + "' got topic '" + topic + "' it does not subscribe to");
                }
                if (!(t.getValue() instanceof List<?> list)) {
                    throw invalid("assignment." + member + "." + topic + " is not an array");
                }
                Set<Integer> mine = out.get(member).computeIfAbsent(topic, k -> new TreeSet<>());
                for (Object p : list) {
                    if (!(p instanceof Long l) || l < 0 || l >= count) {
                        throw invalid("partition " + p + " of topic '" + topic + "' (member '" + member
                            + "') is not one of its " + count + " partitions");
                    }
                    int partition = l.intValue();
                    String before = owner.computeIfAbsent(topic, k -> new HashMap<>()).putIfAbsent(partition, member);
                    if (before != null) {
                        throw invalid("partition " + topic + "-" + partition + " is assigned twice (to '" + before
                            + "' and '" + member + "')");
                    }
                    mine.add(partition);
                }
                if (mine.isEmpty()) {
                    out.get(member).remove(topic);
                }
            }
        }
        Set<String> subscribed = new TreeSet<>();
        subscriptions.values().forEach(subscribed::addAll);
        for (String topic : subscribed) {
            Map<Integer, String> held = owner.getOrDefault(topic, Map.of());
            int count = partitions.get(topic);
            for (int p = 0; p < count; p++) {
                if (!held.containsKey(p)) {
                    throw invalid("partition " + topic + "-" + p + " is not assigned");
                }
            }
        }
        return out;
    }

    static KassignException invalid(String what) {
        return new KassignException("invalid answer: " + what);
    }
}
