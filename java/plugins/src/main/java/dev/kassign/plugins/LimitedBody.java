package dev.kassign.plugins;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A response body read as UTF-8 text, refused past a size limit: a service that answers without end cannot
 * fill the broker's heap before the deadline cuts it.
 */
final class LimitedBody implements HttpResponse.BodySubscriber<String> {

    /** The largest answer read: an assignment of 100,000 partitions is a few MB. */
    static final long LIMIT = 64L << 20;

    private final long limit;
    private final CompletableFuture<String> result = new CompletableFuture<>();
    private final List<ByteBuffer> parts = new ArrayList<>();
    private long size;
    private Flow.Subscription subscription;

    LimitedBody(long limit) {
        this.limit = limit;
    }

    @Override
    public CompletionStage<String> getBody() {
        return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
        if (result.isDone()) {
            return;
        }
        for (ByteBuffer b : items) {
            size += b.remaining();
            parts.add(b);
        }
        if (size > limit) {
            parts.clear();
            subscription.cancel();
            result.completeExceptionally(new IOException("answer larger than " + limit + " bytes"));
        }
    }

    @Override
    public void onError(Throwable t) {
        result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
        if (result.isDone()) {
            return;
        }
        byte[] all = new byte[(int) size];
        int at = 0;
        for (ByteBuffer b : parts) {
            int n = b.remaining();
            b.get(all, at, n);
            at += n;
        }
        parts.clear();
        result.complete(new String(all, StandardCharsets.UTF_8));
    }
}
