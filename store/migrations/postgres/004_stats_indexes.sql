-- Schema version 4: stats indexes: wait steps still waiting, by timeout.
-- Released: never edit this file; add a new rung instead (see ARCHITECTURE.md).
-- The workflow metrics count the wait steps still waiting past their
-- timeout at every refresh; the steps of a store are its whole history,
-- the waiting waits among them few, and this index holds only those.

-- index flows_steps_waiting_timeouts
CREATE INDEX flows_steps_waiting_timeouts ON flows_steps (timeout_at_ms, run_id) WHERE type = 'wait' AND state = 'waiting';
