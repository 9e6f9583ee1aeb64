-- version 1 (raise it with every change of this file; see ../functions.go)
--
-- renew extends the lease of the slot's running claim p_fence to p_lease_us
-- from the time the server received the request (statement_timestamp), and
-- says what it found: 'renewed'; 'finished', when the slot is done or
-- retrying under p_fence (its run recorded its end, perhaps with
-- CompleteTx in a transaction the UPDATE waited for); or 'lost'. The check
-- after a failed UPDATE is a statement of its own, on a snapshot taken after
-- the transaction the UPDATE waited for ended, so it sees what that one
-- committed. Counting the lease from the request's arrival, not from the
-- end of a wait for the marker's lock, keeps a renewal that waited behind a
-- frozen holder's CompleteTx from extending the lease past one lease from
-- when it was sent.
CREATE OR REPLACE FUNCTION {schema}.renew(p_job text, p_slot timestamptz, p_fence bigint, p_lease_us bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE {schema}.markers m SET lease_end = statement_timestamp() + p_lease_us * interval '1 microsecond'
    WHERE m.job = p_job AND m.slot = p_slot AND m.fence = p_fence AND m.state = 'running';
    IF FOUND THEN
        RETURN 'renewed';
    END IF;
    PERFORM FROM {schema}.markers m
    WHERE m.job = p_job AND m.slot = p_slot AND m.fence = p_fence AND m.state IN ('done', 'retrying');
    IF FOUND THEN
        RETURN 'finished';
    END IF;
    RETURN 'lost';
END;
$$;
