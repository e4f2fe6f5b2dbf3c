WITH a(id) AS (SELECT value AS id FROM json_each($1)),
q(id) AS (SELECT a.id FROM a
	UNION ALL
	SELECT DISTINCT p.execution_parent_id AS id FROM a CROSS JOIN flows_runs p
	WHERE p.run_id = a.id AND TRUE AND p.execution_parent_id IS NOT NULL
	  AND p.execution_parent_id NOT IN (SELECT a.id FROM a))
SELECT q.id, c.revision, c.deleted, CASE WHEN r.run_id IS NOT NULL THEN 1 END, r.status,
	r.created_at_ms, r.started_at_ms, r.finished_at_ms,
	r.owner_host_id, r.owner_pid, r.owner_nonce, r.heartbeat_at_ms,
	r.claim_host_id, r.claim_pid, r.claim_nonce, r.claimed_at_ms,
	r.state_json, r.parent_run_id, r.execution_parent_id, r.lineage_id, r.round_ordinal,
	r.cancel_requested_at_ms, r.cancel_acknowledgement_json,
	r.waiting_reason, r.waiting_wake_at_ms, r.waiting_token, NULL, r.waiting_request,
	CASE WHEN r.parent_run_id IS NULL THEN
		(SELECT e.parent_id FROM flows_run_parents e WHERE e.child_id = q.id ORDER BY e.seq, e.parent_id LIMIT 1) END
FROM q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id
