package dev.kassign.plugins;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Latency of one KIP-848 assignment through {@link KassignConsumerGroupAssignor} (translation, the HTTP call to a
 * running {@code kassign serve}, the checks) beside Kafka's own {@link UniformAssignor} on the same group: a
 * member joins a group of 10 topics whose partitions the others hold (uniform's answer without the new member).
 *
 * <p>Run: {@code java -cp <test classpath> dev.kassign.plugins.PluginLatencyBench URL [REPS [WEIGHTS_FILE]]}
 * (docs/benchmarks.md). With {@code WEIGHTS_FILE} (the {@code --weights-file} of the running service) every
 * partition gets a lag (log-normal, seed 42, in records) written there by topic id before each group size, and the
 * plug-in asks for it ({@code kassign.weights.source=file}); the table then adds each answer's max lag per member.
 */
public final class PluginLatencyBench {

    private PluginLatencyBench() {
    }

    public static void main(String[] args) {
        String url = args[0];
        int reps = args.length > 1 ? Integer.parseInt(args[1]) : 30;
        Path weightsFile = args.length > 2 ? Path.of(args[2]) : null;
        KassignConsumerGroupAssignor kassign = new KassignConsumerGroupAssignor();
        kassign.configure(Map.of(KassignConfig.URL_CONFIG, url, KassignConfig.DEADLINE_CONFIG, "5000",
            KassignConfig.WEIGHTS_CONFIG, weightsFile == null ? "request" : "file"));
        System.out.printf("%-11s %-8s %-5s %-24s %-24s %-22s %-10s %-26s %s%n", "partitions", "members", "reps",
            "uniform p50 / p99 (ms)", "kassign p50 / p99 (ms)", "own p50 / p99 (ms)", "fallbacks",
            "max lag uniform / kassign", "status (last)");
        for (int partitions : new int[] {100, 1_000, 10_000}) {
            int members = Math.max(5, partitions / 20);
            Map<Uuid, Integer> counts = new LinkedHashMap<>();
            for (int t = 0; t < 10; t++) {
                counts.put(new Uuid(42L, t), partitions / 10);
            }
            Map<Uuid, long[]> lags = weightsFile == null ? null : writeLags(weightsFile, counts);
            KassignConsumerGroupAssignorTest.Describer describer =
                new KassignConsumerGroupAssignorTest.Describer(counts, Map.of());
            GroupSpecImpl before = spec(members - 1, counts, null);
            GroupAssignment held = new UniformAssignor().assign(before, describer);
            GroupSpecImpl spec = spec(members, counts, held);
            int fallbacks = 0;
            double[] uniform = time(reps, () -> new UniformAssignor().assign(spec, describer));
            double[] ours = new double[reps];
            String status = null;
            time(3, () -> kassign.assign(spec, describer)); // warm-up
            for (int i = 0; i < reps; i++) {
                long start = System.nanoTime();
                kassign.assign(spec, describer);
                ours[i] = (System.nanoTime() - start) / 1e6;
                fallbacks += kassign.lastOutcome().fallback() ? 1 : 0;
                status = kassign.lastOutcome().fallback() ? "fallback: " + kassign.lastOutcome().reason()
                    : kassign.lastOutcome().status();
            }
            // The plug-in's own share: translating, writing the request, reading and checking an answer.
            GroupAssignment answered = kassign.assign(spec, describer);
            Map<String, Object> answer = new LinkedHashMap<>();
            Map<String, Object> assignment = new LinkedHashMap<>();
            answered.members().forEach((m, a) -> {
                Map<String, Object> topics = new LinkedHashMap<>();
                a.partitions().forEach((t, ps) -> topics.put(t.toString(), new java.util.TreeSet<>(ps)));
                assignment.put(m, topics);
            });
            answer.put("format", "kassign/v1");
            answer.put("assignment", assignment);
            String answerText = Json.write(answer);
            double[] own = time(reps, () -> {
                try {
                    KassignConsumerGroupAssignor.Translation t = KassignConsumerGroupAssignor.translate(spec, describer);
                    Json.write(t.instance());
                    return ConsumerAnswer.read((Map<?, ?>) Json.parse(answerText), t.subscriptions(), t.partitions());
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            String maxLag = lags == null ? "-" : String.format("%,d / %,d",
                maxLag(new UniformAssignor().assign(spec, describer), lags), maxLag(answered, lags));
            System.out.printf("%,-11d %,-8d %-5d %-24s %-24s %-22s %-10d %-26s %s%n", partitions, members, reps,
                pct(uniform), pct(ours), pct(own), fallbacks, maxLag, status);
        }
    }

    /** Log-normal lags (seed 42) for every partition, written to the service's weights file by topic id. */
    static Map<Uuid, long[]> writeLags(Path file, Map<Uuid, Integer> counts) {
        Random random = new Random(42);
        Map<Uuid, long[]> lags = new LinkedHashMap<>();
        Map<String, Object> topics = new LinkedHashMap<>();
        counts.forEach((t, n) -> {
            long[] lag = new long[n];
            List<Object> list = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                lag[p] = Math.round(100 * Math.exp(1.5 * random.nextGaussian()));
                list.add(lag[p]);
            }
            lags.put(t, lag);
            topics.put(t.toString(), list);
        });
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("format", "kassign-weights/v1");
        doc.put("unit", "records");
        doc.put("topics", topics);
        try {
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, Json.write(doc));
            // the service reads the file again at the next request that asks for it (its mtime or size changed)
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return lags;
    }

    /** The busiest member's lag under {@code a}. */
    static long maxLag(GroupAssignment a, Map<Uuid, long[]> lags) {
        long max = 0;
        for (var m : a.members().values()) {
            long sum = 0;
            for (var e : m.partitions().entrySet()) {
                for (int p : e.getValue()) {
                    sum += lags.get(e.getKey())[p];
                }
            }
            max = Math.max(max, sum);
        }
        return max;
    }

    static GroupSpecImpl spec(int members, Map<Uuid, Integer> counts, GroupAssignment held) {
        Map<String, MemberSubscriptionAndAssignmentImpl> out = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (int m = 0; m < members; m++) {
            String id = String.format("member-%05d", m);
            Map<Uuid, Set<Integer>> mine = held != null && held.members().containsKey(id)
                ? held.members().get(id).partitions() : Map.of();
            mine.forEach((t, ps) -> ps.forEach(p -> inverted.computeIfAbsent(t, k -> new HashMap<>()).put(p, id)));
            out.put(id, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), counts.keySet(),
                new Assignment(mine)));
        }
        return new GroupSpecImpl(out, SubscriptionType.HOMOGENEOUS, inverted);
    }

    static double[] time(int reps, Supplier<?> call) {
        for (int i = 0; i < 3; i++) {
            call.get();
        }
        double[] out = new double[reps];
        for (int i = 0; i < reps; i++) {
            long start = System.nanoTime();
            call.get();
            out[i] = (System.nanoTime() - start) / 1e6;
        }
        return out;
    }

    static String pct(double[] ms) {
        double[] s = ms.clone();
        Arrays.sort(s);
        double p50 = s[(int) Math.ceil(0.50 * s.length) - 1];
        double p99 = s[(int) Math.ceil(0.99 * s.length) - 1];
        return String.format("%.1f / %.1f", p50, p99);
    }
}
