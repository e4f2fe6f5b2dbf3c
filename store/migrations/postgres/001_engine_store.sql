-- Schema version 1: engine store: runs, changes, spawn edges, journal.
-- Released: never edit this file; add a new rung instead (see ARCHITECTURE.md).

-- function flows_refuse
CREATE FUNCTION flows_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'check_violation';
END
$$;

-- table flows_schema_version
CREATE TABLE flows_schema_version (
    version       bigint NOT NULL PRIMARY KEY,
    name          text   NOT NULL,
    applied_at_ms bigint NOT NULL,
    CONSTRAINT flows_schema_version_ranges CHECK (version BETWEEN 1 AND 9007199254740991 AND applied_at_ms BETWEEN 0 AND 9007199254740991)
);

-- table flows_run_source
CREATE TABLE flows_run_source (
    singleton bigint NOT NULL PRIMARY KEY,
    source    text   NOT NULL,
    revision  bigint NOT NULL,
    CONSTRAINT flows_run_source_singleton CHECK (singleton = 1),
    CONSTRAINT flows_run_source_source CHECK (source ~ '^[0-9a-f]{32}$'),
    CONSTRAINT flows_run_source_revision CHECK (revision BETWEEN 0 AND 9007199254740991)
);

-- trigger flows_run_source_guard
CREATE TRIGGER flows_run_source_guard BEFORE UPDATE ON flows_run_source
FOR EACH ROW WHEN (NEW.singleton IS DISTINCT FROM OLD.singleton OR NEW.source IS DISTINCT FROM OLD.source OR NEW.revision < OLD.revision) EXECUTE FUNCTION flows_refuse('flows_run_source_guard: the source never changes and the revision never goes back');

-- trigger flows_run_source_keep
CREATE TRIGGER flows_run_source_keep BEFORE DELETE ON flows_run_source
FOR EACH ROW EXECUTE FUNCTION flows_refuse('flows_run_source_keep: the source row is never deleted');

-- table flows_runs
CREATE TABLE flows_runs (
    run_id                      text COLLATE "C" NOT NULL PRIMARY KEY,
    status                      text   NOT NULL,
    created_at_ms               bigint NOT NULL,
    started_at_ms               bigint,
    finished_at_ms              bigint,
    owner_host_id               text COLLATE "C",
    owner_pid                   bigint,
    owner_nonce                 text COLLATE "C",
    heartbeat_at_ms             bigint,
    claim_host_id               text COLLATE "C",
    claim_pid                   bigint,
    claim_nonce                 text COLLATE "C",
    claimed_at_ms               bigint,
    state_json                  text   NOT NULL,
    parent_run_id               text COLLATE "C",
    execution_parent_id         text COLLATE "C",
    lineage_id                  text COLLATE "C",
    round_ordinal               bigint,
    cancel_requested_at_ms      bigint,
    cancel_acknowledgement_json text,
    waiting_reason              text,
    waiting_wake_at_ms          bigint,
    waiting_token               text,
    waiting_request             text,
    CONSTRAINT flows_runs_identifiers CHECK (
        (octet_length(run_id) BETWEEN 1 AND 1024 OR (length(run_id) BETWEEN 1 AND 1024 AND length(run_id) + length(regexp_replace(run_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(owner_host_id) BETWEEN 1 AND 1024 OR (length(owner_host_id) BETWEEN 1 AND 1024 AND length(owner_host_id) + length(regexp_replace(owner_host_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(owner_nonce) BETWEEN 1 AND 1024 OR (length(owner_nonce) BETWEEN 1 AND 1024 AND length(owner_nonce) + length(regexp_replace(owner_nonce, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(claim_host_id) BETWEEN 1 AND 1024 OR (length(claim_host_id) BETWEEN 1 AND 1024 AND length(claim_host_id) + length(regexp_replace(claim_host_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(claim_nonce) BETWEEN 1 AND 1024 OR (length(claim_nonce) BETWEEN 1 AND 1024 AND length(claim_nonce) + length(regexp_replace(claim_nonce, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(parent_run_id) BETWEEN 1 AND 1024 OR (length(parent_run_id) BETWEEN 1 AND 1024 AND length(parent_run_id) + length(regexp_replace(parent_run_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(execution_parent_id) BETWEEN 1 AND 1024 OR (length(execution_parent_id) BETWEEN 1 AND 1024 AND length(execution_parent_id) + length(regexp_replace(execution_parent_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(lineage_id) BETWEEN 1 AND 1024 OR (length(lineage_id) BETWEEN 1 AND 1024 AND length(lineage_id) + length(regexp_replace(lineage_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))),
    CONSTRAINT flows_runs_ranges CHECK (
        created_at_ms BETWEEN 0 AND 9007199254740991
        AND started_at_ms BETWEEN 0 AND 9007199254740991
        AND finished_at_ms BETWEEN 0 AND 9007199254740991
        AND owner_pid BETWEEN 0 AND 9007199254740991
        AND heartbeat_at_ms BETWEEN 0 AND 9007199254740991
        AND claim_pid BETWEEN 0 AND 9007199254740991
        AND claimed_at_ms BETWEEN 0 AND 9007199254740991
        AND cancel_requested_at_ms BETWEEN 0 AND 9007199254740991
        AND waiting_wake_at_ms BETWEEN 0 AND 9007199254740991
        AND round_ordinal BETWEEN 1 AND 9007199254740991),
    CONSTRAINT flows_runs_status CHECK (status IN ('pending', 'running', 'suspended', 'completed', 'failed', 'cancelled')),
    CONSTRAINT flows_runs_owner CHECK (
        (status = 'running' AND owner_host_id IS NOT NULL AND owner_pid IS NOT NULL
            AND owner_nonce IS NOT NULL AND heartbeat_at_ms IS NOT NULL)
        OR (status <> 'running' AND owner_host_id IS NULL AND owner_pid IS NULL
            AND owner_nonce IS NULL AND heartbeat_at_ms IS NULL)),
    CONSTRAINT flows_runs_claim CHECK (
        (claim_host_id IS NULL AND claim_pid IS NULL AND claim_nonce IS NULL AND claimed_at_ms IS NULL)
        OR (claim_host_id IS NOT NULL AND claim_pid IS NOT NULL AND claim_nonce IS NOT NULL AND claimed_at_ms IS NOT NULL)),
    CONSTRAINT flows_runs_execution_parent CHECK (parent_run_id IS NULL OR execution_parent_id IS NOT DISTINCT FROM parent_run_id),
    CONSTRAINT flows_runs_not_own_parent CHECK (parent_run_id <> run_id AND execution_parent_id <> run_id),
    CONSTRAINT flows_runs_lineage CHECK (
        (lineage_id IS NULL AND round_ordinal IS NULL)
        OR (lineage_id IS NOT NULL AND round_ordinal IS NOT NULL AND lineage_id <> run_id)),
    CONSTRAINT flows_runs_waiting CHECK (waiting_reason IS NOT NULL
        OR (waiting_wake_at_ms IS NULL AND waiting_token IS NULL AND waiting_request IS NULL)),
    CONSTRAINT flows_runs_state_json CHECK (COALESCE(
        json_typeof(state_json::json -> 'flowName') = 'string' AND (state_json::json ->> 'flowName') <> '', FALSE)),
    CONSTRAINT flows_runs_cancel_acknowledgement CHECK (cancel_acknowledgement_json IS NULL
        OR (cancel_requested_at_ms IS NOT NULL AND json_typeof(cancel_acknowledgement_json::json) = 'object')),
    CONSTRAINT flows_runs_waiting_request CHECK (waiting_request IS NULL OR json_typeof(waiting_request::json) IS NOT NULL)
);

-- index flows_runs_lineage_round
CREATE UNIQUE INDEX flows_runs_lineage_round ON flows_runs (lineage_id, round_ordinal);

-- index flows_runs_rounds
CREATE INDEX flows_runs_rounds ON flows_runs (COALESCE(lineage_id, run_id), COALESCE(round_ordinal, 0), run_id);

-- table flows_run_changes
CREATE TABLE flows_run_changes (
    run_id   text COLLATE "C" NOT NULL PRIMARY KEY,
    revision bigint  NOT NULL,
    deleted  integer NOT NULL,
    CONSTRAINT flows_run_changes_revision_unique UNIQUE (revision),
    CONSTRAINT flows_run_changes_identifiers CHECK ((octet_length(run_id) BETWEEN 1 AND 1024 OR (length(run_id) BETWEEN 1 AND 1024 AND length(run_id) + length(regexp_replace(run_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))),
    CONSTRAINT flows_run_changes_revision CHECK (revision BETWEEN 1 AND 9007199254740991),
    CONSTRAINT flows_run_changes_deleted CHECK (deleted IN (0, 1))
);

-- function flows_run_bump
CREATE FUNCTION flows_run_bump(p_run_id text, p_deleted integer) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    counter text := 'flows.revision_' || 'flows_run_source'::regclass::oid;
    r bigint := nullif(current_setting(counter, true), '')::bigint;
BEGIN
    IF r IS NULL THEN
        -- The lock holds until commit, so revisions commit in order.
        SELECT revision INTO r FROM flows_run_source WHERE singleton = 1 FOR UPDATE;
        PERFORM set_config(counter, (r + 1)::text, true);
        -- Queues flows_run_source_flush: at commit, or at once where
        -- constraints were made immediate, it writes the counter.
        UPDATE flows_run_source SET revision = revision WHERE singleton = 1;
    ELSE
        PERFORM set_config(counter, (r + 1)::text, true);
    END IF;
    r := r + 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted) VALUES (p_run_id, r, p_deleted)
    ON CONFLICT (run_id) DO UPDATE SET revision = EXCLUDED.revision, deleted = EXCLUDED.deleted;
END
$$;

-- function flows_run_source_flush
CREATE FUNCTION flows_run_source_flush() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    counter text := 'flows.revision_' || TG_RELID;
    r bigint := nullif(current_setting(counter, true), '')::bigint;
BEGIN
    PERFORM set_config(counter, '', true);
    IF r IS NOT NULL THEN
        UPDATE flows_run_source SET revision = r WHERE singleton = 1;
    END IF;
    RETURN NULL;
END
$$;

-- trigger flows_run_source_flush
CREATE CONSTRAINT TRIGGER flows_run_source_flush AFTER UPDATE ON flows_run_source
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.revision = OLD.revision) EXECUTE FUNCTION flows_run_source_flush();

-- function flows_run_touch
CREATE FUNCTION flows_run_touch(p_run_id text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM flows_runs WHERE run_id = p_run_id) THEN
        PERFORM flows_run_bump(p_run_id, 0);
    END IF;
END
$$;

-- function flows_runs_changed
CREATE FUNCTION flows_runs_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM flows_run_bump(OLD.run_id, 1);
    ELSE
        PERFORM flows_run_bump(NEW.run_id, 0);
    END IF;
    RETURN NULL;
END
$$;

-- trigger flows_runs_changed_insert
CREATE TRIGGER flows_runs_changed_insert AFTER INSERT ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_runs_changed();

-- trigger flows_runs_changed_update
CREATE TRIGGER flows_runs_changed_update AFTER UPDATE ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_runs_changed();

-- trigger flows_runs_changed_delete
CREATE TRIGGER flows_runs_changed_delete AFTER DELETE ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_runs_changed();

-- trigger flows_runs_run_id_immutable
CREATE TRIGGER flows_runs_run_id_immutable BEFORE UPDATE OF run_id ON flows_runs
FOR EACH ROW WHEN (NEW.run_id IS DISTINCT FROM OLD.run_id) EXECUTE FUNCTION flows_refuse('flows_runs_run_id_immutable: a run keeps its run_id');

-- table flows_run_parents
CREATE TABLE flows_run_parents (
    parent_id text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    child_id  text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    CONSTRAINT flows_run_parents_seq CHECK (seq BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_run_parents_not_self CHECK (parent_id <> child_id)
);

-- index flows_run_parents_by_parent
CREATE INDEX flows_run_parents_by_parent ON flows_run_parents (parent_id, seq, child_id);

-- index flows_run_parents_by_child
CREATE INDEX flows_run_parents_by_child ON flows_run_parents (child_id, seq, parent_id);

-- function flows_runs_execution_parent
CREATE FUNCTION flows_runs_execution_parent() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.execution_parent_id IS DISTINCT FROM (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = NEW.run_id ORDER BY e.seq, e.parent_id LIMIT 1)
    THEN
        RAISE EXCEPTION '%: without a parent_run_id, execution_parent_id must be the parent of the earliest spawn edge', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

-- trigger flows_runs_execution_parent_insert
CREATE TRIGGER flows_runs_execution_parent_insert BEFORE INSERT ON flows_runs
FOR EACH ROW WHEN (NEW.parent_run_id IS NULL) EXECUTE FUNCTION flows_runs_execution_parent();

-- trigger flows_runs_execution_parent_update
CREATE TRIGGER flows_runs_execution_parent_update BEFORE UPDATE OF parent_run_id, execution_parent_id ON flows_runs
FOR EACH ROW WHEN (NEW.parent_run_id IS NULL) EXECUTE FUNCTION flows_runs_execution_parent();

-- function flows_run_parents_changed
CREATE FUNCTION flows_run_parents_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE flows_runs SET execution_parent_id = COALESCE(parent_run_id, (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = flows_runs.run_id ORDER BY e.seq, e.parent_id LIMIT 1))
        WHERE run_id = OLD.child_id;
        PERFORM flows_run_touch(OLD.parent_id);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.child_id IS DISTINCT FROM OLD.child_id) THEN
        UPDATE flows_runs SET execution_parent_id = COALESCE(parent_run_id, (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = flows_runs.run_id ORDER BY e.seq, e.parent_id LIMIT 1))
        WHERE run_id = NEW.child_id;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.parent_id IS DISTINCT FROM OLD.parent_id) THEN
        PERFORM flows_run_touch(NEW.parent_id);
    END IF;
    RETURN NULL;
END
$$;

-- trigger flows_run_parents_changed_insert
CREATE TRIGGER flows_run_parents_changed_insert AFTER INSERT ON flows_run_parents
FOR EACH ROW EXECUTE FUNCTION flows_run_parents_changed();

-- trigger flows_run_parents_changed_update
CREATE TRIGGER flows_run_parents_changed_update AFTER UPDATE ON flows_run_parents
FOR EACH ROW EXECUTE FUNCTION flows_run_parents_changed();

-- trigger flows_run_parents_changed_delete
CREATE TRIGGER flows_run_parents_changed_delete AFTER DELETE ON flows_run_parents
FOR EACH ROW EXECUTE FUNCTION flows_run_parents_changed();

-- function flows_run_parents_gc
CREATE FUNCTION flows_run_parents_gc() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM flows_run_parents WHERE parent_id = OLD.run_id;
    DELETE FROM flows_run_parents WHERE child_id = OLD.run_id;
    RETURN NULL;
END
$$;

-- trigger flows_run_parents_gc
CREATE TRIGGER flows_run_parents_gc AFTER DELETE ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_run_parents_gc();

-- function flows_journal_changed
CREATE FUNCTION flows_journal_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM flows_run_touch(OLD.run_id);
    ELSE
        PERFORM flows_run_touch(NEW.run_id);
    END IF;
    RETURN NULL;
END
$$;

-- table flows_steps
CREATE TABLE flows_steps (
    run_id            text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    step_id           text COLLATE "C" NOT NULL,
    type              text   NOT NULL,
    created_at_ms     bigint NOT NULL,
    state             text,
    max_attempts      bigint,
    target_wake_at_ms bigint,
    event_name        text COLLATE "C",
    timeout_at_ms     bigint,
    resolved_at_ms    bigint,
    parent_step_id    text COLLATE "C",
    PRIMARY KEY (run_id, step_id),
    FOREIGN KEY (run_id, parent_step_id) REFERENCES flows_steps (run_id, step_id) ON DELETE CASCADE,
    CONSTRAINT flows_steps_identifiers CHECK (
        (octet_length(step_id) BETWEEN 1 AND 1024 OR (length(step_id) BETWEEN 1 AND 1024 AND length(step_id) + length(regexp_replace(step_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(event_name) BETWEEN 1 AND 1024 OR (length(event_name) BETWEEN 1 AND 1024 AND length(event_name) + length(regexp_replace(event_name, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(parent_step_id) BETWEEN 1 AND 1024 OR (length(parent_step_id) BETWEEN 1 AND 1024 AND length(parent_step_id) + length(regexp_replace(parent_step_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))),
    CONSTRAINT flows_steps_ranges CHECK (
        created_at_ms BETWEEN 0 AND 9007199254740991
        AND target_wake_at_ms BETWEEN 0 AND 9007199254740991
        AND timeout_at_ms BETWEEN 0 AND 9007199254740991
        AND resolved_at_ms BETWEEN 0 AND 9007199254740991
        AND max_attempts BETWEEN 1 AND 9007199254740991),
    CONSTRAINT flows_steps_type CHECK (type IN ('run', 'sleep', 'wait')),
    CONSTRAINT flows_steps_not_own_parent CHECK (parent_step_id <> step_id),
    CONSTRAINT flows_steps_shape CHECK (COALESCE(
        (type = 'run' AND state IS NULL AND target_wake_at_ms IS NULL AND event_name IS NULL
            AND timeout_at_ms IS NULL AND resolved_at_ms IS NULL)
        OR (type = 'sleep' AND max_attempts IS NULL AND event_name IS NULL AND timeout_at_ms IS NULL
            AND target_wake_at_ms IS NOT NULL
            AND ((state = 'waiting' AND resolved_at_ms IS NULL)
                OR (state = 'elapsed' AND resolved_at_ms IS NOT NULL)))
        OR (type = 'wait' AND max_attempts IS NULL AND target_wake_at_ms IS NULL AND event_name IS NOT NULL
            AND ((state = 'waiting' AND resolved_at_ms IS NULL)
                OR (state = 'satisfied' AND resolved_at_ms IS NOT NULL)
                OR (state = 'timed_out' AND timeout_at_ms IS NOT NULL AND resolved_at_ms IS NOT NULL))),
        FALSE))
);

-- index flows_steps_by_run_created
CREATE INDEX flows_steps_by_run_created ON flows_steps (run_id, created_at_ms, step_id);

-- index flows_steps_by_parent_step
CREATE INDEX flows_steps_by_parent_step ON flows_steps (run_id, parent_step_id);

-- function flows_steps_parent_step
CREATE FUNCTION flows_steps_parent_step() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM flows_steps AS p
    WHERE p.run_id = NEW.run_id AND p.step_id = NEW.parent_step_id AND p.type = 'run') THEN
        RAISE EXCEPTION '%: a parent step must be an existing run step of the same run', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

-- trigger flows_steps_parent_step
CREATE TRIGGER flows_steps_parent_step BEFORE INSERT ON flows_steps
FOR EACH ROW WHEN (NEW.parent_step_id IS NOT NULL) EXECUTE FUNCTION flows_steps_parent_step();

-- trigger flows_steps_identity
CREATE TRIGGER flows_steps_identity BEFORE UPDATE ON flows_steps
FOR EACH ROW WHEN (NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id OR NEW.type IS DISTINCT FROM OLD.type OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms OR NEW.parent_step_id IS DISTINCT FROM OLD.parent_step_id) EXECUTE FUNCTION flows_refuse('flows_steps_identity: a step keeps its run, id, type, creation time and parent step');

-- trigger flows_steps_changed_insert
CREATE TRIGGER flows_steps_changed_insert AFTER INSERT ON flows_steps
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- trigger flows_steps_changed_update
CREATE TRIGGER flows_steps_changed_update AFTER UPDATE ON flows_steps
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- trigger flows_steps_changed_delete
CREATE TRIGGER flows_steps_changed_delete AFTER DELETE ON flows_steps
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- table flows_step_attempts
CREATE TABLE flows_step_attempts (
    attempt_id         text COLLATE "C" NOT NULL,
    run_id             text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    step_id            text COLLATE "C" NOT NULL,
    started_at_ms      bigint NOT NULL,
    state              text   NOT NULL,
    ended_at_ms        bigint,
    result_type        text,
    result_json        text,
    error_message      text,
    error_name         text,
    next_attempt_at_ms bigint,
    PRIMARY KEY (run_id, attempt_id),
    FOREIGN KEY (run_id, step_id) REFERENCES flows_steps (run_id, step_id) ON DELETE CASCADE,
    CONSTRAINT flows_step_attempts_identifiers CHECK ((octet_length(attempt_id) BETWEEN 1 AND 1024 OR (length(attempt_id) BETWEEN 1 AND 1024 AND length(attempt_id) + length(regexp_replace(attempt_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))),
    CONSTRAINT flows_step_attempts_ranges CHECK (
        started_at_ms BETWEEN 0 AND 9007199254740991
        AND ended_at_ms BETWEEN 0 AND 9007199254740991
        AND next_attempt_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_step_attempts_state CHECK (state IN ('started', 'succeeded', 'failed')),
    CONSTRAINT flows_step_attempts_shape CHECK (COALESCE(
        (state = 'started' AND ended_at_ms IS NULL AND result_type IS NULL AND result_json IS NULL
            AND error_message IS NULL AND error_name IS NULL AND next_attempt_at_ms IS NULL)
        OR (state = 'succeeded' AND ended_at_ms IS NOT NULL AND error_message IS NULL AND error_name IS NULL
            AND next_attempt_at_ms IS NULL
            AND ((result_type = 'json' AND result_json IS NOT NULL)
                OR (result_type = 'none' AND result_json IS NULL)))
        OR (state = 'failed' AND ended_at_ms IS NOT NULL AND result_type IS NULL AND result_json IS NULL
            AND error_message IS NOT NULL),
        FALSE)),
    CONSTRAINT flows_step_attempts_result_json CHECK (result_json IS NULL OR json_typeof(result_json::json) IS NOT NULL)
);

-- index flows_step_attempts_by_step
CREATE INDEX flows_step_attempts_by_step ON flows_step_attempts (run_id, step_id, started_at_ms, attempt_id);

-- index flows_step_attempts_one_started
CREATE UNIQUE INDEX flows_step_attempts_one_started ON flows_step_attempts (run_id, step_id) WHERE state = 'started';

-- function flows_step_attempts_run_step
CREATE FUNCTION flows_step_attempts_run_step() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM flows_steps AS s
    WHERE s.run_id = NEW.run_id AND s.step_id = NEW.step_id AND s.type = 'run') THEN
        RAISE EXCEPTION '%: attempts belong to existing run steps only', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

-- trigger flows_step_attempts_run_step
CREATE TRIGGER flows_step_attempts_run_step BEFORE INSERT ON flows_step_attempts
FOR EACH ROW EXECUTE FUNCTION flows_step_attempts_run_step();

-- trigger flows_step_attempts_transition
CREATE TRIGGER flows_step_attempts_transition BEFORE UPDATE ON flows_step_attempts
FOR EACH ROW WHEN (OLD.state <> 'started' OR NEW.attempt_id IS DISTINCT FROM OLD.attempt_id OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id OR NEW.started_at_ms IS DISTINCT FROM OLD.started_at_ms) EXECUTE FUNCTION flows_refuse('flows_step_attempts_transition: an attempt moves only from started to succeeded or failed, and keeps its identity');

-- trigger flows_step_attempts_changed_insert
CREATE TRIGGER flows_step_attempts_changed_insert AFTER INSERT ON flows_step_attempts
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- trigger flows_step_attempts_changed_update
CREATE TRIGGER flows_step_attempts_changed_update AFTER UPDATE ON flows_step_attempts
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- trigger flows_step_attempts_changed_delete
CREATE TRIGGER flows_step_attempts_changed_delete AFTER DELETE ON flows_step_attempts
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- table flows_inbound_events
CREATE TABLE flows_inbound_events (
    event_id      text COLLATE "C" NOT NULL,
    run_id        text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    event_name    text COLLATE "C" NOT NULL,
    payload       text,
    created_at_ms bigint NOT NULL,
    claimed_by    text COLLATE "C",
    claimed_at_ms bigint,
    PRIMARY KEY (run_id, event_id),
    CONSTRAINT flows_inbound_events_identifiers CHECK ((octet_length(event_id) BETWEEN 1 AND 1024 OR (length(event_id) BETWEEN 1 AND 1024 AND length(event_id) + length(regexp_replace(event_id, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(event_name) BETWEEN 1 AND 1024 OR (length(event_name) BETWEEN 1 AND 1024 AND length(event_name) + length(regexp_replace(event_name, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))
        AND (octet_length(claimed_by) BETWEEN 1 AND 1024 OR (length(claimed_by) BETWEEN 1 AND 1024 AND length(claimed_by) + length(regexp_replace(claimed_by, '[^\U00010000-\U0010FFFF]', '', 'g')) <= 1024))),
    CONSTRAINT flows_inbound_events_ranges CHECK (created_at_ms BETWEEN 0 AND 9007199254740991
        AND claimed_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_inbound_events_payload CHECK (payload IS NULL OR json_typeof(payload::json) IS NOT NULL),
    CONSTRAINT flows_inbound_events_claim CHECK ((claimed_by IS NULL) = (claimed_at_ms IS NULL))
);

-- index flows_inbound_events_by_run_created
CREATE INDEX flows_inbound_events_by_run_created ON flows_inbound_events (run_id, created_at_ms, event_id);

-- index flows_inbound_events_by_name
CREATE INDEX flows_inbound_events_by_name ON flows_inbound_events (run_id, event_name, created_at_ms, event_id);

-- index flows_inbound_events_one_claim
CREATE UNIQUE INDEX flows_inbound_events_one_claim ON flows_inbound_events (run_id, claimed_by) WHERE claimed_by IS NOT NULL;

-- trigger flows_inbound_events_identity
CREATE TRIGGER flows_inbound_events_identity BEFORE UPDATE ON flows_inbound_events
FOR EACH ROW WHEN (NEW.event_id IS DISTINCT FROM OLD.event_id OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.event_name IS DISTINCT FROM OLD.event_name OR NEW.payload IS DISTINCT FROM OLD.payload OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms) EXECUTE FUNCTION flows_refuse('flows_inbound_events_identity: an event keeps its id, run, name, payload and creation time; only its claim changes');

-- trigger flows_inbound_events_changed_insert
CREATE TRIGGER flows_inbound_events_changed_insert AFTER INSERT ON flows_inbound_events
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- trigger flows_inbound_events_changed_update
CREATE TRIGGER flows_inbound_events_changed_update AFTER UPDATE ON flows_inbound_events
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- trigger flows_inbound_events_changed_delete
CREATE TRIGGER flows_inbound_events_changed_delete AFTER DELETE ON flows_inbound_events
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- table flows_run_events
CREATE TABLE flows_run_events (
    run_id              text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq                 bigint NOT NULL,
    recorded_at_ms      bigint NOT NULL,
    type                text   NOT NULL,
    cancellation_reason text,
    PRIMARY KEY (run_id, seq),
    CONSTRAINT flows_run_events_ranges CHECK (
        seq BETWEEN 0 AND 9007199254740991 AND recorded_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_run_events_type CHECK (type IN ('created', 'started', 'paused', 'resumed', 'completed', 'failed', 'cancelled')),
    CONSTRAINT flows_run_events_cancellation_reason CHECK (cancellation_reason IS NULL OR type = 'cancelled')
);

-- trigger flows_run_events_no_update
CREATE TRIGGER flows_run_events_no_update BEFORE UPDATE ON flows_run_events
FOR EACH ROW EXECUTE FUNCTION flows_refuse('flows_run_events_no_update: run events are append-only');

-- function flows_run_events_no_delete
CREATE FUNCTION flows_run_events_no_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id) THEN
        RAISE EXCEPTION '%: run events are append-only and go only with their run', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN OLD;
END
$$;

-- trigger flows_run_events_no_delete
CREATE TRIGGER flows_run_events_no_delete BEFORE DELETE ON flows_run_events
FOR EACH ROW EXECUTE FUNCTION flows_run_events_no_delete();

-- trigger flows_run_events_changed_insert
CREATE TRIGGER flows_run_events_changed_insert AFTER INSERT ON flows_run_events
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed();

-- function flows_runs_journal_gc
CREATE FUNCTION flows_runs_journal_gc() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM flows_run_events WHERE run_id = OLD.run_id;
    DELETE FROM flows_inbound_events WHERE run_id = OLD.run_id;
    DELETE FROM flows_step_attempts WHERE run_id = OLD.run_id;
    DELETE FROM flows_steps WHERE run_id = OLD.run_id;
    RETURN NULL;
END
$$;

-- trigger flows_runs_journal_gc
CREATE TRIGGER flows_runs_journal_gc AFTER DELETE ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_runs_journal_gc();
