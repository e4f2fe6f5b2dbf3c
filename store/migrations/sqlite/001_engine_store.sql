-- Schema version 1: engine store: runs, changes, spawn edges, journal.
-- Released: never edit this file; add a new rung instead (see ARCHITECTURE.md).

-- table flows_schema_version
CREATE TABLE flows_schema_version (
    version       INTEGER NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    applied_at_ms INTEGER NOT NULL,
    CONSTRAINT flows_schema_version_ranges CHECK (version BETWEEN 1 AND 9007199254740991 AND applied_at_ms BETWEEN 0 AND 9007199254740991)
) STRICT;

-- table flows_run_source
CREATE TABLE flows_run_source (
    singleton INTEGER NOT NULL PRIMARY KEY,
    source    TEXT    NOT NULL,
    revision  INTEGER NOT NULL,
    CONSTRAINT flows_run_source_singleton CHECK (singleton = 1),
    CONSTRAINT flows_run_source_source CHECK (length(source) = 32 AND source NOT GLOB '*[^0-9a-f]*'),
    CONSTRAINT flows_run_source_revision CHECK (revision BETWEEN 0 AND 9007199254740991)
) STRICT;

-- trigger flows_run_source_guard
CREATE TRIGGER flows_run_source_guard BEFORE UPDATE ON flows_run_source
WHEN NEW.singleton IS DISTINCT FROM OLD.singleton OR NEW.source IS DISTINCT FROM OLD.source OR NEW.revision < OLD.revision
BEGIN
    SELECT RAISE(ABORT, 'flows_run_source_guard: the source never changes and the revision never goes back');
END;

-- trigger flows_run_source_keep
CREATE TRIGGER flows_run_source_keep BEFORE DELETE ON flows_run_source
BEGIN
    SELECT RAISE(ABORT, 'flows_run_source_keep: the source row is never deleted');
END;

-- table flows_runs
CREATE TABLE flows_runs (
    run_id                      TEXT    NOT NULL PRIMARY KEY,
    status                      TEXT    NOT NULL,
    created_at_ms               INTEGER NOT NULL,
    started_at_ms               INTEGER,
    finished_at_ms              INTEGER,
    owner_host_id               TEXT,
    owner_pid                   INTEGER,
    owner_nonce                 TEXT,
    heartbeat_at_ms             INTEGER,
    claim_host_id               TEXT,
    claim_pid                   INTEGER,
    claim_nonce                 TEXT,
    claimed_at_ms               INTEGER,
    state_json                  TEXT    NOT NULL,
    parent_run_id               TEXT,
    execution_parent_id         TEXT,
    lineage_id                  TEXT,
    round_ordinal               INTEGER,
    cancel_requested_at_ms      INTEGER,
    cancel_acknowledgement_json TEXT,
    waiting_reason              TEXT,
    waiting_wake_at_ms          INTEGER,
    waiting_token               TEXT,
    waiting_request             TEXT,
    CONSTRAINT flows_runs_identifiers CHECK (
        length(run_id) BETWEEN 1 AND 1024 AND instr(run_id, char(0)) = 0
        AND length(owner_host_id) BETWEEN 1 AND 1024 AND instr(owner_host_id, char(0)) = 0
        AND length(owner_nonce) BETWEEN 1 AND 1024 AND instr(owner_nonce, char(0)) = 0
        AND length(claim_host_id) BETWEEN 1 AND 1024 AND instr(claim_host_id, char(0)) = 0
        AND length(claim_nonce) BETWEEN 1 AND 1024 AND instr(claim_nonce, char(0)) = 0
        AND length(parent_run_id) BETWEEN 1 AND 1024 AND instr(parent_run_id, char(0)) = 0
        AND length(execution_parent_id) BETWEEN 1 AND 1024 AND instr(execution_parent_id, char(0)) = 0
        AND length(lineage_id) BETWEEN 1 AND 1024 AND instr(lineage_id, char(0)) = 0),
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
    CONSTRAINT flows_runs_state_json CHECK (CASE WHEN json_valid(state_json)
        THEN COALESCE(json_type(state_json, '$.flowName') = 'text' AND json_extract(state_json, '$.flowName') <> '', FALSE)
        ELSE FALSE END),
    CONSTRAINT flows_runs_cancel_acknowledgement CHECK (cancel_acknowledgement_json IS NULL
        OR (cancel_requested_at_ms IS NOT NULL
            AND CASE WHEN json_valid(cancel_acknowledgement_json)
                THEN json_type(cancel_acknowledgement_json) = 'object' ELSE FALSE END)),
    CONSTRAINT flows_runs_waiting_request CHECK (waiting_request IS NULL OR json_valid(waiting_request))
) STRICT;

-- index flows_runs_lineage_round
CREATE UNIQUE INDEX flows_runs_lineage_round ON flows_runs (lineage_id, round_ordinal);

-- index flows_runs_rounds
CREATE INDEX flows_runs_rounds ON flows_runs (COALESCE(lineage_id, run_id), COALESCE(round_ordinal, 0), run_id);

-- table flows_run_changes
CREATE TABLE flows_run_changes (
    run_id   TEXT    NOT NULL PRIMARY KEY,
    revision INTEGER NOT NULL,
    deleted  INTEGER NOT NULL,
    CONSTRAINT flows_run_changes_revision_unique UNIQUE (revision),
    CONSTRAINT flows_run_changes_identifiers CHECK (length(run_id) BETWEEN 1 AND 1024 AND instr(run_id, char(0)) = 0),
    CONSTRAINT flows_run_changes_revision CHECK (revision BETWEEN 1 AND 9007199254740991),
    CONSTRAINT flows_run_changes_deleted CHECK (deleted IN (0, 1))
) STRICT, WITHOUT ROWID;

-- trigger flows_runs_changed_insert
CREATE TRIGGER flows_runs_changed_insert AFTER INSERT ON flows_runs
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_runs_changed_update
CREATE TRIGGER flows_runs_changed_update AFTER UPDATE ON flows_runs
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_runs_changed_delete
CREATE TRIGGER flows_runs_changed_delete AFTER DELETE ON flows_runs
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT OLD.run_id, revision, 1 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_runs_run_id_immutable
CREATE TRIGGER flows_runs_run_id_immutable BEFORE UPDATE OF run_id ON flows_runs
WHEN NEW.run_id IS DISTINCT FROM OLD.run_id
BEGIN
    SELECT RAISE(ABORT, 'flows_runs_run_id_immutable: a run keeps its run_id');
END;

-- table flows_run_parents
CREATE TABLE flows_run_parents (
    parent_id TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    child_id  TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    CONSTRAINT flows_run_parents_seq CHECK (seq BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_run_parents_not_self CHECK (parent_id <> child_id)
) STRICT, WITHOUT ROWID;

-- index flows_run_parents_by_parent
CREATE INDEX flows_run_parents_by_parent ON flows_run_parents (parent_id, seq, child_id);

-- index flows_run_parents_by_child
CREATE INDEX flows_run_parents_by_child ON flows_run_parents (child_id, seq, parent_id);

-- trigger flows_runs_execution_parent_insert
CREATE TRIGGER flows_runs_execution_parent_insert BEFORE INSERT ON flows_runs
WHEN NEW.parent_run_id IS NULL AND NEW.execution_parent_id IS DISTINCT FROM (
    SELECT e.parent_id FROM flows_run_parents AS e
    WHERE e.child_id = NEW.run_id ORDER BY e.seq, e.parent_id LIMIT 1)
BEGIN
    SELECT RAISE(ABORT, 'flows_runs_execution_parent_insert: without a parent_run_id, execution_parent_id must be the parent of the earliest spawn edge');
END;

-- trigger flows_runs_execution_parent_update
CREATE TRIGGER flows_runs_execution_parent_update BEFORE UPDATE OF parent_run_id, execution_parent_id ON flows_runs
WHEN NEW.parent_run_id IS NULL AND NEW.execution_parent_id IS DISTINCT FROM (
    SELECT e.parent_id FROM flows_run_parents AS e
    WHERE e.child_id = NEW.run_id ORDER BY e.seq, e.parent_id LIMIT 1)
BEGIN
    SELECT RAISE(ABORT, 'flows_runs_execution_parent_update: without a parent_run_id, execution_parent_id must be the parent of the earliest spawn edge');
END;

-- trigger flows_run_parents_changed_insert
CREATE TRIGGER flows_run_parents_changed_insert AFTER INSERT ON flows_run_parents
BEGIN
    UPDATE flows_runs SET execution_parent_id = COALESCE(parent_run_id, (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = flows_runs.run_id ORDER BY e.seq, e.parent_id LIMIT 1))
    WHERE run_id = NEW.child_id;
    UPDATE flows_run_source SET revision = revision + 1
    WHERE singleton = 1 AND EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.parent_id);
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT r.run_id, s.revision, 0 FROM flows_runs AS r, flows_run_source AS s
    WHERE r.run_id = NEW.parent_id AND s.singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_run_parents_changed_update
CREATE TRIGGER flows_run_parents_changed_update AFTER UPDATE ON flows_run_parents
BEGIN
    UPDATE flows_runs SET execution_parent_id = COALESCE(parent_run_id, (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = flows_runs.run_id ORDER BY e.seq, e.parent_id LIMIT 1))
    WHERE run_id IN (OLD.child_id, NEW.child_id);
    UPDATE flows_run_source SET revision = revision + 1
    WHERE singleton = 1 AND EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.parent_id);
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT r.run_id, s.revision, 0 FROM flows_runs AS r, flows_run_source AS s
    WHERE r.run_id = OLD.parent_id AND s.singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
    UPDATE flows_run_source SET revision = revision + 1
    WHERE singleton = 1 AND EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.parent_id) AND NEW.parent_id IS DISTINCT FROM OLD.parent_id;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT r.run_id, s.revision, 0 FROM flows_runs AS r, flows_run_source AS s
    WHERE r.run_id = NEW.parent_id AND s.singleton = 1 AND NEW.parent_id IS DISTINCT FROM OLD.parent_id
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_run_parents_changed_delete
CREATE TRIGGER flows_run_parents_changed_delete AFTER DELETE ON flows_run_parents
BEGIN
    UPDATE flows_runs SET execution_parent_id = COALESCE(parent_run_id, (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = flows_runs.run_id ORDER BY e.seq, e.parent_id LIMIT 1))
    WHERE run_id = OLD.child_id;
    UPDATE flows_run_source SET revision = revision + 1
    WHERE singleton = 1 AND EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.parent_id);
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT r.run_id, s.revision, 0 FROM flows_runs AS r, flows_run_source AS s
    WHERE r.run_id = OLD.parent_id AND s.singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_run_parents_gc
CREATE TRIGGER flows_run_parents_gc AFTER DELETE ON flows_runs
BEGIN
    DELETE FROM flows_run_parents WHERE parent_id = OLD.run_id;
    DELETE FROM flows_run_parents WHERE child_id = OLD.run_id;
END;

-- table flows_steps
CREATE TABLE flows_steps (
    run_id            TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    step_id           TEXT    NOT NULL,
    type              TEXT    NOT NULL,
    created_at_ms     INTEGER NOT NULL,
    state             TEXT,
    max_attempts      INTEGER,
    target_wake_at_ms INTEGER,
    event_name        TEXT,
    timeout_at_ms     INTEGER,
    resolved_at_ms    INTEGER,
    parent_step_id    TEXT,
    PRIMARY KEY (run_id, step_id),
    FOREIGN KEY (run_id, parent_step_id) REFERENCES flows_steps (run_id, step_id) ON DELETE CASCADE,
    CONSTRAINT flows_steps_identifiers CHECK (
        length(step_id) BETWEEN 1 AND 1024 AND instr(step_id, char(0)) = 0
        AND length(event_name) BETWEEN 1 AND 1024 AND instr(event_name, char(0)) = 0
        AND length(parent_step_id) BETWEEN 1 AND 1024 AND instr(parent_step_id, char(0)) = 0),
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
) STRICT;

-- index flows_steps_by_run_created
CREATE INDEX flows_steps_by_run_created ON flows_steps (run_id, created_at_ms, step_id);

-- index flows_steps_by_parent_step
CREATE INDEX flows_steps_by_parent_step ON flows_steps (run_id, parent_step_id);

-- trigger flows_steps_parent_step
CREATE TRIGGER flows_steps_parent_step BEFORE INSERT ON flows_steps
WHEN NEW.parent_step_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM flows_steps AS p
    WHERE p.run_id = NEW.run_id AND p.step_id = NEW.parent_step_id AND p.type = 'run')
BEGIN
    SELECT RAISE(ABORT, 'flows_steps_parent_step: a parent step must be an existing run step of the same run');
END;

-- trigger flows_steps_identity
CREATE TRIGGER flows_steps_identity BEFORE UPDATE ON flows_steps
WHEN NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id OR NEW.type IS DISTINCT FROM OLD.type OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms OR NEW.parent_step_id IS DISTINCT FROM OLD.parent_step_id
BEGIN
    SELECT RAISE(ABORT, 'flows_steps_identity: a step keeps its run, id, type, creation time and parent step');
END;

-- trigger flows_steps_changed_insert
CREATE TRIGGER flows_steps_changed_insert AFTER INSERT ON flows_steps
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_steps_changed_update
CREATE TRIGGER flows_steps_changed_update AFTER UPDATE ON flows_steps
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_steps_changed_delete
CREATE TRIGGER flows_steps_changed_delete AFTER DELETE ON flows_steps
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT OLD.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- table flows_step_attempts
CREATE TABLE flows_step_attempts (
    attempt_id         TEXT    NOT NULL,
    run_id             TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    step_id            TEXT    NOT NULL,
    started_at_ms      INTEGER NOT NULL,
    state              TEXT    NOT NULL,
    ended_at_ms        INTEGER,
    result_type        TEXT,
    result_json        TEXT,
    error_message      TEXT,
    error_name         TEXT,
    next_attempt_at_ms INTEGER,
    PRIMARY KEY (run_id, attempt_id),
    FOREIGN KEY (run_id, step_id) REFERENCES flows_steps (run_id, step_id) ON DELETE CASCADE,
    CONSTRAINT flows_step_attempts_identifiers CHECK (length(attempt_id) BETWEEN 1 AND 1024 AND instr(attempt_id, char(0)) = 0),
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
    CONSTRAINT flows_step_attempts_result_json CHECK (result_json IS NULL OR json_valid(result_json))
) STRICT;

-- index flows_step_attempts_by_step
CREATE INDEX flows_step_attempts_by_step ON flows_step_attempts (run_id, step_id, started_at_ms, attempt_id);

-- index flows_step_attempts_one_started
CREATE UNIQUE INDEX flows_step_attempts_one_started ON flows_step_attempts (run_id, step_id) WHERE state = 'started';

-- trigger flows_step_attempts_run_step
CREATE TRIGGER flows_step_attempts_run_step BEFORE INSERT ON flows_step_attempts
WHEN NOT EXISTS (SELECT 1 FROM flows_steps AS s
    WHERE s.run_id = NEW.run_id AND s.step_id = NEW.step_id AND s.type = 'run')
BEGIN
    SELECT RAISE(ABORT, 'flows_step_attempts_run_step: attempts belong to existing run steps only');
END;

-- trigger flows_step_attempts_transition
CREATE TRIGGER flows_step_attempts_transition BEFORE UPDATE ON flows_step_attempts
WHEN OLD.state <> 'started' OR NEW.attempt_id IS DISTINCT FROM OLD.attempt_id OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id OR NEW.started_at_ms IS DISTINCT FROM OLD.started_at_ms
BEGIN
    SELECT RAISE(ABORT, 'flows_step_attempts_transition: an attempt moves only from started to succeeded or failed, and keeps its identity');
END;

-- trigger flows_step_attempts_changed_insert
CREATE TRIGGER flows_step_attempts_changed_insert AFTER INSERT ON flows_step_attempts
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_step_attempts_changed_update
CREATE TRIGGER flows_step_attempts_changed_update AFTER UPDATE ON flows_step_attempts
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_step_attempts_changed_delete
CREATE TRIGGER flows_step_attempts_changed_delete AFTER DELETE ON flows_step_attempts
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT OLD.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- table flows_inbound_events
CREATE TABLE flows_inbound_events (
    event_id      TEXT    NOT NULL,
    run_id        TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    event_name    TEXT    NOT NULL,
    payload       TEXT,
    created_at_ms INTEGER NOT NULL,
    claimed_by    TEXT,
    claimed_at_ms INTEGER,
    PRIMARY KEY (run_id, event_id),
    CONSTRAINT flows_inbound_events_identifiers CHECK (length(event_id) BETWEEN 1 AND 1024 AND instr(event_id, char(0)) = 0
        AND length(event_name) BETWEEN 1 AND 1024 AND instr(event_name, char(0)) = 0
        AND length(claimed_by) BETWEEN 1 AND 1024 AND instr(claimed_by, char(0)) = 0),
    CONSTRAINT flows_inbound_events_ranges CHECK (created_at_ms BETWEEN 0 AND 9007199254740991
        AND claimed_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_inbound_events_payload CHECK (payload IS NULL OR json_valid(payload)),
    CONSTRAINT flows_inbound_events_claim CHECK ((claimed_by IS NULL) = (claimed_at_ms IS NULL))
) STRICT;

-- index flows_inbound_events_by_run_created
CREATE INDEX flows_inbound_events_by_run_created ON flows_inbound_events (run_id, created_at_ms, event_id);

-- index flows_inbound_events_by_name
CREATE INDEX flows_inbound_events_by_name ON flows_inbound_events (run_id, event_name, created_at_ms, event_id);

-- index flows_inbound_events_one_claim
CREATE UNIQUE INDEX flows_inbound_events_one_claim ON flows_inbound_events (run_id, claimed_by) WHERE claimed_by IS NOT NULL;

-- trigger flows_inbound_events_identity
CREATE TRIGGER flows_inbound_events_identity BEFORE UPDATE ON flows_inbound_events
WHEN NEW.event_id IS DISTINCT FROM OLD.event_id OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.event_name IS DISTINCT FROM OLD.event_name OR NEW.payload IS DISTINCT FROM OLD.payload OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms
BEGIN
    SELECT RAISE(ABORT, 'flows_inbound_events_identity: an event keeps its id, run, name, payload and creation time; only its claim changes');
END;

-- trigger flows_inbound_events_changed_insert
CREATE TRIGGER flows_inbound_events_changed_insert AFTER INSERT ON flows_inbound_events
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_inbound_events_changed_update
CREATE TRIGGER flows_inbound_events_changed_update AFTER UPDATE ON flows_inbound_events
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_inbound_events_changed_delete
CREATE TRIGGER flows_inbound_events_changed_delete AFTER DELETE ON flows_inbound_events
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT OLD.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- table flows_run_events
CREATE TABLE flows_run_events (
    run_id              TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq                 INTEGER NOT NULL,
    recorded_at_ms      INTEGER NOT NULL,
    type                TEXT    NOT NULL,
    cancellation_reason TEXT,
    PRIMARY KEY (run_id, seq),
    CONSTRAINT flows_run_events_ranges CHECK (
        seq BETWEEN 0 AND 9007199254740991 AND recorded_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT flows_run_events_type CHECK (type IN ('created', 'started', 'paused', 'resumed', 'completed', 'failed', 'cancelled')),
    CONSTRAINT flows_run_events_cancellation_reason CHECK (cancellation_reason IS NULL OR type = 'cancelled')
) STRICT, WITHOUT ROWID;

-- trigger flows_run_events_no_update
CREATE TRIGGER flows_run_events_no_update BEFORE UPDATE ON flows_run_events
BEGIN
    SELECT RAISE(ABORT, 'flows_run_events_no_update: run events are append-only');
END;

-- trigger flows_run_events_no_delete
CREATE TRIGGER flows_run_events_no_delete BEFORE DELETE ON flows_run_events
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id)
BEGIN
    SELECT RAISE(ABORT, 'flows_run_events_no_delete: run events are append-only and go only with their run');
END;

-- trigger flows_run_events_changed_insert
CREATE TRIGGER flows_run_events_changed_insert AFTER INSERT ON flows_run_events
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = NEW.run_id)
BEGIN
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT NEW.run_id, revision, 0 FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;
END;

-- trigger flows_runs_journal_gc
CREATE TRIGGER flows_runs_journal_gc AFTER DELETE ON flows_runs
BEGIN
    DELETE FROM flows_run_events WHERE run_id = OLD.run_id;
    DELETE FROM flows_inbound_events WHERE run_id = OLD.run_id;
    DELETE FROM flows_step_attempts WHERE run_id = OLD.run_id;
    DELETE FROM flows_steps WHERE run_id = OLD.run_id;
END;
