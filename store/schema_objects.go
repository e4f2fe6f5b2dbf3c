package store

import (
	"fmt"
	"strings"
)

// inventory is the engine store's schema, object by object, in creation
// order. Tables come with their indexes and triggers; PostgreSQL functions
// come before the triggers that run them.
//
// Conventions that hold throughout:
//   - Column types: SQLite tables are STRICT (INTEGER and TEXT only);
//     PostgreSQL uses bigint for every integer and text for every string.
//     JSON is text in both, so it passes through byte for byte; SQLite checks
//     it with json_valid, PostgreSQL by casting to json (not jsonb: json
//     accepts exactly the texts json_valid does, \u0000 included).
//     Booleans are integers 0 or 1.
//   - Identifier columns are COLLATE "C" in PostgreSQL, so that they sort by
//     code point as SQLite's BINARY collation does and keyset pages agree
//     across dialects.
//   - Every CHECK is named, so a violation names its constraint in both
//     dialects' error messages; every refusing trigger's message starts with
//     the trigger's name.
//   - Revisions: every change of a run takes the next revision and locks
//     flows_run_source until commit, so revisions commit in order. SQLite
//     updates the row at each change. PostgreSQL keeps every version of a
//     row that a transaction updates until the transaction ends, so there
//     the count runs in a transaction-local setting (flows.revision_ and the
//     oid of flows_run_source) and a deferred trigger writes the last
//     revision into the row at commit: inside a writing transaction the row
//     still shows the revision from before it.
//   - Journal and edge rows reference their run with ON DELETE CASCADE
//     foreign keys. PostgreSQL always enforces them; SQLite only on
//     connections with foreign_keys on, so the gc triggers delete the same
//     rows for connections without it (the sqlite3 shell's default).
var inventory = buildInventory()

func buildInventory() []Object {
	var objs []Object
	add := func(o ...Object) { objs = append(objs, o...) }

	add(
		Object{
			Name: "flows_refuse", Kind: KindFunction, Since: 1,
			Why: "Lets a trigger whose WHEN clause detects a forbidden change refuse it with its own message, as SQLite's RAISE(ABORT) does.",
			Postgres: `CREATE FUNCTION flows_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'check_violation';
END
$$`,
		},
		Object{
			Name: "flows_schema_version", Kind: KindTable, Since: 1,
			Why: "Records each migration applied, so migrate knows where to resume and serve refuses a store newer than it understands.",
			SQLite: `CREATE TABLE flows_schema_version (
    version       INTEGER NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    applied_at_ms INTEGER NOT NULL,
    CONSTRAINT flows_schema_version_ranges CHECK (version BETWEEN 1 AND ` + maxSafe + ` AND ` + naturals("applied_at_ms") + `)
) STRICT`,
			Postgres: `CREATE TABLE flows_schema_version (
    version       bigint NOT NULL PRIMARY KEY,
    name          text   NOT NULL,
    applied_at_ms bigint NOT NULL,
    CONSTRAINT flows_schema_version_ranges CHECK (version BETWEEN 1 AND ` + maxSafe + ` AND ` + naturals("applied_at_ms") + `)
)`,
		},
		Object{
			Name: "flows_run_source", Kind: KindTable, Since: 1,
			Why: "Holds the store's random identity and its revision high-water mark, the position every snapshot and cursor is bound to.",
			SQLite: `CREATE TABLE flows_run_source (
    singleton INTEGER NOT NULL PRIMARY KEY,
    source    TEXT    NOT NULL,
    revision  INTEGER NOT NULL,
    CONSTRAINT flows_run_source_singleton CHECK (singleton = 1),
    CONSTRAINT flows_run_source_source CHECK (length(source) = 32 AND source NOT GLOB '*[^0-9a-f]*'),
    CONSTRAINT flows_run_source_revision CHECK (revision BETWEEN 0 AND ` + maxSafe + `)
) STRICT`,
			Postgres: `CREATE TABLE flows_run_source (
    singleton bigint NOT NULL PRIMARY KEY,
    source    text   NOT NULL,
    revision  bigint NOT NULL,
    CONSTRAINT flows_run_source_singleton CHECK (singleton = 1),
    CONSTRAINT flows_run_source_source CHECK (source ~ '^[0-9a-f]{32}$'),
    CONSTRAINT flows_run_source_revision CHECK (revision BETWEEN 0 AND ` + maxSafe + `)
)`,
		},
		refusal("flows_run_source_guard", "flows_run_source", "BEFORE UPDATE",
			"NEW.singleton IS DISTINCT FROM OLD.singleton OR NEW.source IS DISTINCT FROM OLD.source OR NEW.revision < OLD.revision",
			"the source never changes and the revision never goes back",
			"Keeps the identity and the position monotonic: a changed source or a lower revision would make cursors and snapshots lie."),
		refusal("flows_run_source_keep", "flows_run_source", "BEFORE DELETE", "",
			"the source row is never deleted",
			"Without the source row the change triggers would have no revision to advance and changes would go unrecorded."),
	)

	add(
		Object{
			Name: "flows_runs", Kind: KindTable, Since: 1,
			Why: "One row per live run: the state flowsnap serves.",
			SQLite: `CREATE TABLE flows_runs (
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
    ` + runsCommonChecks(SQLite) + `,
    CONSTRAINT flows_runs_state_json CHECK (CASE WHEN json_valid(state_json)
        THEN COALESCE(json_type(state_json, '$.flowName') = 'text' AND json_extract(state_json, '$.flowName') <> '', FALSE)
        ELSE FALSE END),
    CONSTRAINT flows_runs_cancel_acknowledgement CHECK (cancel_acknowledgement_json IS NULL
        OR (cancel_requested_at_ms IS NOT NULL
            AND CASE WHEN json_valid(cancel_acknowledgement_json)
                THEN json_type(cancel_acknowledgement_json) = 'object' ELSE FALSE END)),
    CONSTRAINT flows_runs_waiting_request CHECK (waiting_request IS NULL OR json_valid(waiting_request))
) STRICT`,
			Postgres: `CREATE TABLE flows_runs (
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
    ` + runsCommonChecks(Postgres) + `,
    CONSTRAINT flows_runs_state_json CHECK (COALESCE(
        json_typeof(state_json::json -> 'flowName') = 'string' AND (state_json::json ->> 'flowName') <> '', FALSE)),
    CONSTRAINT flows_runs_cancel_acknowledgement CHECK (cancel_acknowledgement_json IS NULL
        OR (cancel_requested_at_ms IS NOT NULL AND json_typeof(cancel_acknowledgement_json::json) = 'object')),
    CONSTRAINT flows_runs_waiting_request CHECK (waiting_request IS NULL OR json_typeof(waiting_request::json) IS NOT NULL)
)`,
		},
		Object{
			Name: "flows_runs_lineage_round", Kind: KindIndex, Table: "flows_runs", Since: 1,
			Why:      "A lineage has at most one run per round (round 0, whose columns are NULL, is the lineage's own run).",
			Portable: `CREATE UNIQUE INDEX flows_runs_lineage_round ON flows_runs (lineage_id, round_ordinal)`,
		},
		Object{
			Name: "flows_runs_rounds", Kind: KindIndex, Table: "flows_runs", Since: 1,
			Why:      "Makes the rounds of a lineage, round 0 included, one keyset range scan; queries must spell the same expressions for either dialect to use it.",
			Portable: `CREATE INDEX flows_runs_rounds ON flows_runs (COALESCE(lineage_id, run_id), COALESCE(round_ordinal, 0), run_id)`,
		},
		Object{
			Name: "flows_run_changes", Kind: KindTable, Since: 1,
			Why: "The latest revision of every run id ever seen, tombstones included: what a run's revision and the change feed read.",
			SQLite: `CREATE TABLE flows_run_changes (
    run_id   TEXT    NOT NULL PRIMARY KEY,
    revision INTEGER NOT NULL,
    deleted  INTEGER NOT NULL,
    CONSTRAINT flows_run_changes_revision_unique UNIQUE (revision),
    CONSTRAINT flows_run_changes_identifiers CHECK (` + identifiers(SQLite, "run_id") + `),
    CONSTRAINT flows_run_changes_revision CHECK (revision BETWEEN 1 AND ` + maxSafe + `),
    CONSTRAINT flows_run_changes_deleted CHECK (deleted IN (0, 1))
) STRICT, WITHOUT ROWID`,
			Postgres: `CREATE TABLE flows_run_changes (
    run_id   text COLLATE "C" NOT NULL PRIMARY KEY,
    revision bigint  NOT NULL,
    deleted  integer NOT NULL,
    CONSTRAINT flows_run_changes_revision_unique UNIQUE (revision),
    CONSTRAINT flows_run_changes_identifiers CHECK (` + identifiers(Postgres, "run_id") + `),
    CONSTRAINT flows_run_changes_revision CHECK (revision BETWEEN 1 AND ` + maxSafe + `),
    CONSTRAINT flows_run_changes_deleted CHECK (deleted IN (0, 1))
)`,
		},
		Object{
			Name: "flows_run_bump", Kind: KindFunction, Since: 1,
			Why: "Gives a change of one run the transaction's next revision: the first change locks the source row, later ones count in a transaction-local setting, so a transaction's cost grows linearly with its changes.",
			Postgres: `CREATE FUNCTION flows_run_bump(p_run_id text, p_deleted integer) RETURNS void
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
$$`,
		},
		Object{
			Name: "flows_run_source_flush", Kind: KindFunction, Since: 1,
			Why: "Writes the transaction's last revision into the source row before commit and clears the counter, so a later change in the same transaction starts a new count.",
			Postgres: `CREATE FUNCTION flows_run_source_flush() RETURNS trigger
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
$$`,
		},
		Object{
			Name: "flows_run_source_flush", Kind: KindTrigger, Table: "flows_run_source", Since: 1,
			Why: "PostgreSQL keeps every version of a row a transaction updates until it commits, so advancing the source row once per change would make each change cost more than the last; the row is written once, at commit, instead.",
			Postgres: `CREATE CONSTRAINT TRIGGER flows_run_source_flush AFTER UPDATE ON flows_run_source
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.revision = OLD.revision) EXECUTE FUNCTION flows_run_source_flush()`,
		},
		Object{
			Name: "flows_run_touch", Kind: KindFunction, Since: 1,
			Why: "Records a change to a run's edges or journal, but only while the run row exists, so a run's deletion (and the cascade it starts) never outruns its tombstone.",
			Postgres: `CREATE FUNCTION flows_run_touch(p_run_id text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM flows_runs WHERE run_id = p_run_id) THEN
        PERFORM flows_run_bump(p_run_id, 0);
    END IF;
END
$$`,
		},
		Object{
			Name: "flows_runs_changed", Kind: KindFunction, Since: 1,
			Why: "Records every insert, update and delete of a run row as a change, a delete as a tombstone.",
			Postgres: `CREATE FUNCTION flows_runs_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM flows_run_bump(OLD.run_id, 1);
    ELSE
        PERFORM flows_run_bump(NEW.run_id, 0);
    END IF;
    RETURN NULL;
END
$$`,
		},
	)
	for _, op := range []string{"insert", "update", "delete"} {
		ref, deleted := "NEW", 0
		if op == "delete" {
			ref, deleted = "OLD", 1
		}
		add(Object{
			Name: "flows_runs_changed_" + op, Kind: KindTrigger, Table: "flows_runs", Since: 1,
			Why: fmt.Sprintf("Every %s of a run advances the revision inside the writing transaction, whoever the writer is.", op),
			SQLite: `CREATE TRIGGER flows_runs_changed_` + op + ` AFTER ` + strings.ToUpper(op) + ` ON flows_runs
BEGIN` + sqliteBump(ref+".run_id", deleted) + `
END`,
			Postgres: `CREATE TRIGGER flows_runs_changed_` + op + ` AFTER ` + strings.ToUpper(op) + ` ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_runs_changed()`,
		})
	}
	add(refusal("flows_runs_run_id_immutable", "flows_runs", "BEFORE UPDATE OF run_id",
		"NEW.run_id IS DISTINCT FROM OLD.run_id",
		"a run keeps its run_id",
		"A run's id is its identity in changes, edges, journal and cursors; renaming it would orphan all of them."))

	add(
		Object{
			Name: "flows_run_parents", Kind: KindTable, Since: 1,
			Why: "Spawn edges: a run's children in order, and a child's several parents when it joins them.",
			SQLite: `CREATE TABLE flows_run_parents (
    parent_id TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    child_id  TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    CONSTRAINT flows_run_parents_seq CHECK (` + naturals("seq") + `),
    CONSTRAINT flows_run_parents_not_self CHECK (parent_id <> child_id)
) STRICT, WITHOUT ROWID`,
			Postgres: `CREATE TABLE flows_run_parents (
    parent_id text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    child_id  text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    CONSTRAINT flows_run_parents_seq CHECK (` + naturals("seq") + `),
    CONSTRAINT flows_run_parents_not_self CHECK (parent_id <> child_id)
)`,
		},
		Object{
			Name: "flows_run_parents_by_parent", Kind: KindIndex, Table: "flows_run_parents", Since: 1,
			Why:      "Pages a run's children by (seq, child_id) as a keyset range scan.",
			Portable: `CREATE INDEX flows_run_parents_by_parent ON flows_run_parents (parent_id, seq, child_id)`,
		},
		Object{
			Name: "flows_run_parents_by_child", Kind: KindIndex, Table: "flows_run_parents", Since: 1,
			Why:      "Finds a child's earliest edge by (seq, parent_id), its effective parent, and its edges when it is deleted.",
			Portable: `CREATE INDEX flows_run_parents_by_child ON flows_run_parents (child_id, seq, parent_id)`,
		},
		Object{
			Name: "flows_runs_execution_parent", Kind: KindFunction, Since: 1,
			Why: "Refuses a run row whose execution_parent_id is not the parent of its earliest spawn edge when it has no parent_run_id.",
			Postgres: `CREATE FUNCTION flows_runs_execution_parent() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.execution_parent_id IS DISTINCT FROM (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = NEW.run_id ORDER BY e.seq, e.parent_id LIMIT 1)
    THEN
        RAISE EXCEPTION '%: ` + executionParentMessage + `', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$`,
		},
		executionParentCheck("insert", "BEFORE INSERT"),
		executionParentCheck("update", "BEFORE UPDATE OF parent_run_id, execution_parent_id"),
		Object{
			Name: "flows_run_parents_changed", Kind: KindFunction, Since: 1,
			Why: "When edges change, rederives each affected child's execution_parent_id (one update, hence one change of the child) and records a change of each affected parent.",
			Postgres: `CREATE FUNCTION flows_run_parents_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE flows_runs SET execution_parent_id = ` + effectiveParent + `
        WHERE run_id = OLD.child_id;
        PERFORM flows_run_touch(OLD.parent_id);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.child_id IS DISTINCT FROM OLD.child_id) THEN
        UPDATE flows_runs SET execution_parent_id = ` + effectiveParent + `
        WHERE run_id = NEW.child_id;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.parent_id IS DISTINCT FROM OLD.parent_id) THEN
        PERFORM flows_run_touch(NEW.parent_id);
    END IF;
    RETURN NULL;
END
$$`,
		},
	)
	edgeSQLite := map[string]string{
		"insert": `
    UPDATE flows_runs SET execution_parent_id = ` + effectiveParent + `
    WHERE run_id = NEW.child_id;` + sqliteTouch("NEW.parent_id", ""),
		"update": `
    UPDATE flows_runs SET execution_parent_id = ` + effectiveParent + `
    WHERE run_id IN (OLD.child_id, NEW.child_id);` + sqliteTouch("OLD.parent_id", "") +
			sqliteTouch("NEW.parent_id", "NEW.parent_id IS DISTINCT FROM OLD.parent_id"),
		"delete": `
    UPDATE flows_runs SET execution_parent_id = ` + effectiveParent + `
    WHERE run_id = OLD.child_id;` + sqliteTouch("OLD.parent_id", ""),
	}
	for _, op := range []string{"insert", "update", "delete"} {
		add(Object{
			Name: "flows_run_parents_changed_" + op, Kind: KindTrigger, Table: "flows_run_parents", Since: 1,
			Why: fmt.Sprintf("An edge %s changes the child's effective parent and the parent's children, so both get a new revision.", op),
			SQLite: `CREATE TRIGGER flows_run_parents_changed_` + op + ` AFTER ` + strings.ToUpper(op) + ` ON flows_run_parents
BEGIN` + edgeSQLite[op] + `
END`,
			Postgres: `CREATE TRIGGER flows_run_parents_changed_` + op + ` AFTER ` + strings.ToUpper(op) + ` ON flows_run_parents
FOR EACH ROW EXECUTE FUNCTION flows_run_parents_changed()`,
		})
	}
	add(
		Object{
			Name: "flows_run_parents_gc", Kind: KindFunction, Since: 1,
			Why: "Deletes a deleted run's edges in both directions.",
			Postgres: `CREATE FUNCTION flows_run_parents_gc() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM flows_run_parents WHERE parent_id = OLD.run_id;
    DELETE FROM flows_run_parents WHERE child_id = OLD.run_id;
    RETURN NULL;
END
$$`,
		},
		Object{
			Name: "flows_run_parents_gc", Kind: KindTrigger, Table: "flows_runs", Since: 1,
			Why: "Deleting a run deletes its edges even where foreign keys are not enforced (a SQLite connection without foreign_keys).",
			SQLite: `CREATE TRIGGER flows_run_parents_gc AFTER DELETE ON flows_runs
BEGIN
    DELETE FROM flows_run_parents WHERE parent_id = OLD.run_id;
    DELETE FROM flows_run_parents WHERE child_id = OLD.run_id;
END`,
			Postgres: `CREATE TRIGGER flows_run_parents_gc AFTER DELETE ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_run_parents_gc()`,
		},
		Object{
			Name: "flows_journal_changed", Kind: KindFunction, Since: 1,
			Why: "Records a change of the run a journal row belongs to, unless the run row is already gone.",
			Postgres: `CREATE FUNCTION flows_journal_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM flows_run_touch(OLD.run_id);
    ELSE
        PERFORM flows_run_touch(NEW.run_id);
    END IF;
    RETURN NULL;
END
$$`,
		},
	)

	add(
		Object{
			Name: "flows_steps", Kind: KindTable, Since: 1,
			Why: "A run's durable steps: run steps (lifecycle in attempts), sleeps and waits.",
			SQLite: `CREATE TABLE flows_steps (
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
    ` + stepsChecks(SQLite) + `
) STRICT`,
			Postgres: `CREATE TABLE flows_steps (
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
    ` + stepsChecks(Postgres) + `
)`,
		},
		Object{
			Name: "flows_steps_by_run_created", Kind: KindIndex, Table: "flows_steps", Since: 1,
			Why:      "Pages a run's steps in creation order, at the same cost at any depth.",
			Portable: `CREATE INDEX flows_steps_by_run_created ON flows_steps (run_id, created_at_ms, step_id)`,
		},
		Object{
			Name: "flows_steps_by_parent_step", Kind: KindIndex, Table: "flows_steps", Since: 1,
			Why:      "Finds the steps a run step encloses, which the self-referencing foreign key needs on every delete of a step.",
			Portable: `CREATE INDEX flows_steps_by_parent_step ON flows_steps (run_id, parent_step_id)`,
		},
		Object{
			Name: "flows_steps_parent_step", Kind: KindFunction, Since: 1,
			Why: "Refuses a step whose parent step is not a run step of the same run.",
			Postgres: `CREATE FUNCTION flows_steps_parent_step() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (` + parentIsRunStep + `) THEN
        RAISE EXCEPTION '%: ` + parentStepMessage + `', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$`,
		},
		Object{
			Name: "flows_steps_parent_step", Kind: KindTrigger, Table: "flows_steps", Since: 1,
			Why: "A step is enclosed only by a run step of its own run (never a sleep or wait, never itself).",
			SQLite: `CREATE TRIGGER flows_steps_parent_step BEFORE INSERT ON flows_steps
WHEN NEW.parent_step_id IS NOT NULL AND NOT EXISTS (` + parentIsRunStep + `)
BEGIN
    SELECT RAISE(ABORT, 'flows_steps_parent_step: ` + parentStepMessage + `');
END`,
			Postgres: `CREATE TRIGGER flows_steps_parent_step BEFORE INSERT ON flows_steps
FOR EACH ROW WHEN (NEW.parent_step_id IS NOT NULL) EXECUTE FUNCTION flows_steps_parent_step()`,
		},
		refusal("flows_steps_identity", "flows_steps", "BEFORE UPDATE",
			"NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id OR NEW.type IS DISTINCT FROM OLD.type OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms OR NEW.parent_step_id IS DISTINCT FROM OLD.parent_step_id",
			"a step keeps its run, id, type, creation time and parent step",
			"Replay matches steps by identity; a step that changed type or parent would replay as a different step."),
	)
	add(journalChanged("flows_steps", "insert", "update", "delete")...)

	add(
		Object{
			Name: "flows_step_attempts", Kind: KindTable, Since: 1,
			Why: "The attempts of run steps: when each ran and how it ended.",
			SQLite: `CREATE TABLE flows_step_attempts (
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
    ` + attemptsChecks(SQLite) + `,
    CONSTRAINT flows_step_attempts_result_json CHECK (result_json IS NULL OR json_valid(result_json))
) STRICT`,
			Postgres: `CREATE TABLE flows_step_attempts (
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
    ` + attemptsChecks(Postgres) + `,
    CONSTRAINT flows_step_attempts_result_json CHECK (result_json IS NULL OR json_typeof(result_json::json) IS NOT NULL)
)`,
		},
		Object{
			Name: "flows_step_attempts_by_step", Kind: KindIndex, Table: "flows_step_attempts", Since: 1,
			Why:      "Lists a step's attempts in start order, and serves the foreign key from attempts to their step.",
			Portable: `CREATE INDEX flows_step_attempts_by_step ON flows_step_attempts (run_id, step_id, started_at_ms, attempt_id)`,
		},
		Object{
			Name: "flows_step_attempts_one_started", Kind: KindIndex, Table: "flows_step_attempts", Since: 1,
			Why:      "A step has at most one attempt in flight, so two workers can never both run it.",
			Portable: `CREATE UNIQUE INDEX flows_step_attempts_one_started ON flows_step_attempts (run_id, step_id) WHERE state = 'started'`,
		},
		Object{
			Name: "flows_step_attempts_run_step", Kind: KindFunction, Since: 1,
			Why: "Refuses an attempt whose step is not a run step.",
			Postgres: `CREATE FUNCTION flows_step_attempts_run_step() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (` + attemptStepIsRunStep + `) THEN
        RAISE EXCEPTION '%: ` + attemptStepMessage + `', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$`,
		},
		Object{
			Name: "flows_step_attempts_run_step", Kind: KindTrigger, Table: "flows_step_attempts", Since: 1,
			Why: "Only run steps are attempted; sleeps and waits resolve in their own row.",
			SQLite: `CREATE TRIGGER flows_step_attempts_run_step BEFORE INSERT ON flows_step_attempts
WHEN NOT EXISTS (` + attemptStepIsRunStep + `)
BEGIN
    SELECT RAISE(ABORT, 'flows_step_attempts_run_step: ` + attemptStepMessage + `');
END`,
			Postgres: `CREATE TRIGGER flows_step_attempts_run_step BEFORE INSERT ON flows_step_attempts
FOR EACH ROW EXECUTE FUNCTION flows_step_attempts_run_step()`,
		},
		refusal("flows_step_attempts_transition", "flows_step_attempts", "BEFORE UPDATE",
			"OLD.state <> 'started' OR NEW.attempt_id IS DISTINCT FROM OLD.attempt_id OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id OR NEW.started_at_ms IS DISTINCT FROM OLD.started_at_ms",
			"an attempt moves only from started to succeeded or failed, and keeps its identity",
			"A finished attempt is history: rewriting its outcome would change what replay returns."),
	)
	add(journalChanged("flows_step_attempts", "insert", "update", "delete")...)

	add(
		Object{
			Name: "flows_inbound_events", Kind: KindTable, Since: 1,
			Why: "Events sent to a run, and which wait step claimed each.",
			SQLite: `CREATE TABLE flows_inbound_events (
    event_id      TEXT    NOT NULL,
    run_id        TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    event_name    TEXT    NOT NULL,
    payload       TEXT,
    created_at_ms INTEGER NOT NULL,
    claimed_by    TEXT,
    claimed_at_ms INTEGER,
    PRIMARY KEY (run_id, event_id),
    CONSTRAINT flows_inbound_events_identifiers CHECK (` + identifiers(SQLite, "event_id", "event_name", "claimed_by") + `),
    CONSTRAINT flows_inbound_events_ranges CHECK (` + naturals("created_at_ms", "claimed_at_ms") + `),
    CONSTRAINT flows_inbound_events_payload CHECK (payload IS NULL OR json_valid(payload)),
    CONSTRAINT flows_inbound_events_claim CHECK ((claimed_by IS NULL) = (claimed_at_ms IS NULL))
) STRICT`,
			Postgres: `CREATE TABLE flows_inbound_events (
    event_id      text COLLATE "C" NOT NULL,
    run_id        text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    event_name    text COLLATE "C" NOT NULL,
    payload       text,
    created_at_ms bigint NOT NULL,
    claimed_by    text COLLATE "C",
    claimed_at_ms bigint,
    PRIMARY KEY (run_id, event_id),
    CONSTRAINT flows_inbound_events_identifiers CHECK (` + identifiers(Postgres, "event_id", "event_name", "claimed_by") + `),
    CONSTRAINT flows_inbound_events_ranges CHECK (` + naturals("created_at_ms", "claimed_at_ms") + `),
    CONSTRAINT flows_inbound_events_payload CHECK (payload IS NULL OR json_typeof(payload::json) IS NOT NULL),
    CONSTRAINT flows_inbound_events_claim CHECK ((claimed_by IS NULL) = (claimed_at_ms IS NULL))
)`,
		},
		Object{
			Name: "flows_inbound_events_by_run_created", Kind: KindIndex, Table: "flows_inbound_events", Since: 1,
			Why:      "Pages a run's inbound events in arrival order, at the same cost at any depth.",
			Portable: `CREATE INDEX flows_inbound_events_by_run_created ON flows_inbound_events (run_id, created_at_ms, event_id)`,
		},
		Object{
			Name: "flows_inbound_events_by_name", Kind: KindIndex, Table: "flows_inbound_events", Since: 1,
			Why:      "Finds the oldest events of a name for a run, which is how a wait step looks for its event.",
			Portable: `CREATE INDEX flows_inbound_events_by_name ON flows_inbound_events (run_id, event_name, created_at_ms, event_id)`,
		},
		Object{
			Name: "flows_inbound_events_one_claim", Kind: KindIndex, Table: "flows_inbound_events", Since: 1,
			Why:      "A wait step claims at most one event, so an event is never delivered twice to the same wait.",
			Portable: `CREATE UNIQUE INDEX flows_inbound_events_one_claim ON flows_inbound_events (run_id, claimed_by) WHERE claimed_by IS NOT NULL`,
		},
		refusal("flows_inbound_events_identity", "flows_inbound_events", "BEFORE UPDATE",
			"NEW.event_id IS DISTINCT FROM OLD.event_id OR NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.event_name IS DISTINCT FROM OLD.event_name OR NEW.payload IS DISTINCT FROM OLD.payload OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms",
			"an event keeps its id, run, name, payload and creation time; only its claim changes",
			"What was sent stays what was sent; only the claim is the engine's to record."),
	)
	add(journalChanged("flows_inbound_events", "insert", "update", "delete")...)

	add(
		Object{
			Name: "flows_run_events", Kind: KindTable, Since: 1,
			Why: "The append-only lifecycle log of a run (created, started, paused, resumed, completed, failed, cancelled).",
			SQLite: `CREATE TABLE flows_run_events (
    run_id              TEXT    NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq                 INTEGER NOT NULL,
    recorded_at_ms      INTEGER NOT NULL,
    type                TEXT    NOT NULL,
    cancellation_reason TEXT,
    PRIMARY KEY (run_id, seq),
    ` + runEventsChecks + `
) STRICT, WITHOUT ROWID`,
			Postgres: `CREATE TABLE flows_run_events (
    run_id              text COLLATE "C" NOT NULL REFERENCES flows_runs (run_id) ON DELETE CASCADE,
    seq                 bigint NOT NULL,
    recorded_at_ms      bigint NOT NULL,
    type                text   NOT NULL,
    cancellation_reason text,
    PRIMARY KEY (run_id, seq),
    ` + runEventsChecks + `
)`,
		},
		refusal("flows_run_events_no_update", "flows_run_events", "BEFORE UPDATE", "",
			"run events are append-only",
			"The lifecycle log is history; an edited entry would rewrite what happened."),
		Object{
			Name: "flows_run_events_no_delete", Kind: KindFunction, Since: 1,
			Why: "Refuses deleting a run event while its run exists.",
			Postgres: `CREATE FUNCTION flows_run_events_no_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id) THEN
        RAISE EXCEPTION '%: ` + runEventsDeleteMessage + `', TG_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN OLD;
END
$$`,
		},
		Object{
			Name: "flows_run_events_no_delete", Kind: KindTrigger, Table: "flows_run_events", Since: 1,
			Why: "Run events leave only with their run: the run row is deleted first and the cascade (or gc) then finds it gone.",
			SQLite: `CREATE TRIGGER flows_run_events_no_delete BEFORE DELETE ON flows_run_events
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = OLD.run_id)
BEGIN
    SELECT RAISE(ABORT, 'flows_run_events_no_delete: ` + runEventsDeleteMessage + `');
END`,
			Postgres: `CREATE TRIGGER flows_run_events_no_delete BEFORE DELETE ON flows_run_events
FOR EACH ROW EXECUTE FUNCTION flows_run_events_no_delete()`,
		},
	)
	add(journalChanged("flows_run_events", "insert")...)

	add(
		Object{
			Name: "flows_runs_journal_gc", Kind: KindFunction, Since: 1,
			Why: "Deletes a deleted run's journal.",
			Postgres: `CREATE FUNCTION flows_runs_journal_gc() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN` + journalGC + `
    RETURN NULL;
END
$$`,
		},
		Object{
			Name: "flows_runs_journal_gc", Kind: KindTrigger, Table: "flows_runs", Since: 1,
			Why: "Deleting a run deletes its steps, attempts and events even where foreign keys are not enforced (a SQLite connection without foreign_keys).",
			SQLite: `CREATE TRIGGER flows_runs_journal_gc AFTER DELETE ON flows_runs
BEGIN` + journalGC + `
END`,
			Postgres: `CREATE TRIGGER flows_runs_journal_gc AFTER DELETE ON flows_runs
FOR EACH ROW EXECUTE FUNCTION flows_runs_journal_gc()`,
		},
	)
	add(listingIndexes()...)
	return objs
}

// refusal is a trigger that refuses a change: when is a condition on NEW and
// OLD, written once for both dialects (empty: always refuse), and the
// message, prefixed with the trigger's name, is the same in both.
func refusal(name, table, timing, when, message, why string) Object {
	msg := name + ": " + message
	sqliteWhen, pgWhen := "", ""
	if when != "" {
		sqliteWhen = "\nWHEN " + when
		pgWhen = " WHEN (" + when + ")"
	}
	return Object{
		Name: name, Kind: KindTrigger, Table: table, Since: 1, Why: why,
		SQLite: `CREATE TRIGGER ` + name + ` ` + timing + ` ON ` + table + sqliteWhen + `
BEGIN
    SELECT RAISE(ABORT, '` + msg + `');
END`,
		Postgres: `CREATE TRIGGER ` + name + ` ` + timing + ` ON ` + table + `
FOR EACH ROW` + pgWhen + ` EXECUTE FUNCTION flows_refuse('` + msg + `')`,
	}
}

// sqliteBump is the SQLite trigger body that advances the revision and makes
// it the latest change of the run whose id is the expression id. PostgreSQL
// calls flows_run_bump instead.
func sqliteBump(id string, deleted int) string {
	return fmt.Sprintf(`
    UPDATE flows_run_source SET revision = revision + 1 WHERE singleton = 1;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT %s, revision, %d FROM flows_run_source WHERE singleton = 1
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;`, id, deleted)
}

// sqliteTouch is sqliteBump for a run that may be gone (then it does
// nothing), and only when the extra condition holds (empty: always). It is
// what flows_run_touch is in PostgreSQL.
func sqliteTouch(id, cond string) string {
	if cond != "" {
		cond = " AND " + cond
	}
	return fmt.Sprintf(`
    UPDATE flows_run_source SET revision = revision + 1
    WHERE singleton = 1 AND EXISTS (SELECT 1 FROM flows_runs WHERE run_id = %[1]s)%[2]s;
    INSERT INTO flows_run_changes (run_id, revision, deleted)
    SELECT r.run_id, s.revision, 0 FROM flows_runs AS r, flows_run_source AS s
    WHERE r.run_id = %[1]s AND s.singleton = 1%[2]s
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, deleted = excluded.deleted;`, id, cond)
}

// journalChanged returns the triggers that record a change of the owning
// run whenever a row of a journal table is written.
func journalChanged(table string, ops ...string) []Object {
	objs := make([]Object, len(ops))
	for i, op := range ops {
		ref := "NEW"
		if op == "delete" {
			ref = "OLD"
		}
		name := table + "_changed_" + op
		objs[i] = Object{
			Name: name, Kind: KindTrigger, Table: table, Since: 1,
			Why: fmt.Sprintf("A %s in %s is a change of its run, recorded unless the run itself is being deleted.", op, table),
			SQLite: `CREATE TRIGGER ` + name + ` AFTER ` + strings.ToUpper(op) + ` ON ` + table + `
WHEN EXISTS (SELECT 1 FROM flows_runs WHERE run_id = ` + ref + `.run_id)
BEGIN` + sqliteBump(ref+".run_id", 0) + `
END`,
			Postgres: `CREATE TRIGGER ` + name + ` AFTER ` + strings.ToUpper(op) + ` ON ` + table + `
FOR EACH ROW EXECUTE FUNCTION flows_journal_changed()`,
		}
	}
	return objs
}

// executionParentCheck is the trigger that guards execution_parent_id on
// insert or on update of the columns it depends on. Runs with a
// parent_run_id are guarded by the flows_runs_execution_parent CHECK alone.
func executionParentCheck(op, timing string) Object {
	name := "flows_runs_execution_parent_" + op
	return Object{
		Name: name, Kind: KindTrigger, Table: "flows_runs", Since: 1,
		Why: "A run's execution parent is derived, never chosen: the writer must set what the edges say, so one write is one change.",
		SQLite: `CREATE TRIGGER ` + name + ` ` + timing + ` ON flows_runs
WHEN NEW.parent_run_id IS NULL AND NEW.execution_parent_id IS DISTINCT FROM (
    SELECT e.parent_id FROM flows_run_parents AS e
    WHERE e.child_id = NEW.run_id ORDER BY e.seq, e.parent_id LIMIT 1)
BEGIN
    SELECT RAISE(ABORT, '` + name + `: ` + executionParentMessage + `');
END`,
		Postgres: `CREATE TRIGGER ` + name + ` ` + timing + ` ON flows_runs
FOR EACH ROW WHEN (NEW.parent_run_id IS NULL) EXECUTE FUNCTION flows_runs_execution_parent()`,
	}
}

// Messages shared by a SQLite trigger and its PostgreSQL function.
const (
	executionParentMessage = "without a parent_run_id, execution_parent_id must be the parent of the earliest spawn edge"
	parentStepMessage      = "a parent step must be an existing run step of the same run"
	attemptStepMessage     = "attempts belong to existing run steps only"
	runEventsDeleteMessage = "run events are append-only and go only with their run"
)

// effectiveParent is what execution_parent_id must be for the flows_runs row
// being updated: its parent_run_id, or else the parent of its earliest spawn
// edge by (seq, parent_id).
const effectiveParent = `COALESCE(parent_run_id, (
        SELECT e.parent_id FROM flows_run_parents AS e
        WHERE e.child_id = flows_runs.run_id ORDER BY e.seq, e.parent_id LIMIT 1))`

const parentIsRunStep = `SELECT 1 FROM flows_steps AS p
    WHERE p.run_id = NEW.run_id AND p.step_id = NEW.parent_step_id AND p.type = 'run'`

const attemptStepIsRunStep = `SELECT 1 FROM flows_steps AS s
    WHERE s.run_id = NEW.run_id AND s.step_id = NEW.step_id AND s.type = 'run'`

// journalGC deletes a run's journal, attempts before the steps they
// reference.
const journalGC = `
    DELETE FROM flows_run_events WHERE run_id = OLD.run_id;
    DELETE FROM flows_inbound_events WHERE run_id = OLD.run_id;
    DELETE FROM flows_step_attempts WHERE run_id = OLD.run_id;
    DELETE FROM flows_steps WHERE run_id = OLD.run_id;`

// runsCommonChecks are the CHECKs of flows_runs whose text only differs in
// the identifier checks.
func runsCommonChecks(d Dialect) string {
	return `CONSTRAINT flows_runs_identifiers CHECK (
        ` + identifiers(d, "run_id", "owner_host_id", "owner_nonce", "claim_host_id", "claim_nonce",
		"parent_run_id", "execution_parent_id", "lineage_id") + `),
    CONSTRAINT flows_runs_ranges CHECK (
        ` + naturals("created_at_ms", "started_at_ms", "finished_at_ms", "owner_pid", "heartbeat_at_ms",
		"claim_pid", "claimed_at_ms", "cancel_requested_at_ms", "waiting_wake_at_ms") + `
        AND round_ordinal BETWEEN 1 AND ` + maxSafe + `),
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
        OR (waiting_wake_at_ms IS NULL AND waiting_token IS NULL AND waiting_request IS NULL))`
}

// stepsChecks are the CHECKs of flows_steps. The shape compares nullable
// columns, and a CHECK passes on NULL, so a NULL verdict counts as a
// rejection.
func stepsChecks(d Dialect) string {
	return `CONSTRAINT flows_steps_identifiers CHECK (
        ` + identifiers(d, "step_id", "event_name", "parent_step_id") + `),
    CONSTRAINT flows_steps_ranges CHECK (
        ` + naturals("created_at_ms", "target_wake_at_ms", "timeout_at_ms", "resolved_at_ms") + `
        AND max_attempts BETWEEN 1 AND ` + maxSafe + `),
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
        FALSE))`
}

// attemptsChecks are the CHECKs of flows_step_attempts; as for steps, a NULL
// verdict of the shape is a rejection.
func attemptsChecks(d Dialect) string {
	return `CONSTRAINT flows_step_attempts_identifiers CHECK (` + identifiers(d, "attempt_id") + `),
    CONSTRAINT flows_step_attempts_ranges CHECK (
        ` + naturals("started_at_ms", "ended_at_ms", "next_attempt_at_ms") + `),
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
        FALSE))`
}

// runEventsChecks are the CHECKs of flows_run_events, the same in both
// dialects.
const runEventsChecks = `CONSTRAINT flows_run_events_ranges CHECK (
        seq BETWEEN 0 AND ` + maxSafe + ` AND recorded_at_ms BETWEEN 0 AND ` + maxSafe + `),
    CONSTRAINT flows_run_events_type CHECK (type IN ('created', 'started', 'paused', 'resumed', 'completed', 'failed', 'cancelled')),
    CONSTRAINT flows_run_events_cancellation_reason CHECK (cancellation_reason IS NULL OR type = 'cancelled')`
