-- Schema version 3: ops indexes: runs by finish time, overall, by status and by flow; flow names.
-- Released: never edit this file; add a new rung instead (see ARCHITECTURE.md).
-- Each index ends with (finished_at_ms, run_id): a list of finished runs newest
-- first, and a count of the runs finished in a window (an hour of a chart),
-- is one range of one index. They hold the finished runs only: a range on
-- finished_at_ms (or finished_at_ms IS NOT NULL) implies their WHERE, and
-- a statement about unfinished runs (finished_at_ms IS NULL) never reads
-- them.

-- index flows_runs_finished
CREATE INDEX flows_runs_finished ON flows_runs (finished_at_ms, run_id) WHERE finished_at_ms IS NOT NULL;

-- index flows_runs_by_status_finished
CREATE INDEX flows_runs_by_status_finished ON flows_runs (status, finished_at_ms, run_id) WHERE finished_at_ms IS NOT NULL;

-- index flows_runs_by_flow_finished
CREATE INDEX flows_runs_by_flow_finished ON flows_runs ((state_json::json ->> 'flowName'), finished_at_ms, run_id) WHERE finished_at_ms IS NOT NULL;

-- index flows_runs_by_flow_status_finished
CREATE INDEX flows_runs_by_flow_status_finished ON flows_runs ((state_json::json ->> 'flowName'), status, finished_at_ms, run_id) WHERE finished_at_ms IS NOT NULL;

-- The distinct flow names are read by skipping from one name to the next
-- in this index. Its collation is "C" so that names sort by code point, as
-- SQLite's BINARY collation sorts them, whatever the database's collation:
-- both dialects list the names in one order, and a prefix is one range.
-- index flows_runs_flow_names
CREATE INDEX flows_runs_flow_names ON flows_runs (((state_json::json ->> 'flowName') COLLATE "C"));
