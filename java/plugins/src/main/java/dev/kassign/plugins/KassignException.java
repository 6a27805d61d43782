package dev.kassign.plugins;

/** Why kassign's answer is not used: the service could not be reached in time, failed, or answered wrongly. */
public final class KassignException extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * @param reason one line a platform team reads in the broker's or the client's log
     */
    public KassignException(String reason) {
        super(reason);
    }
}
