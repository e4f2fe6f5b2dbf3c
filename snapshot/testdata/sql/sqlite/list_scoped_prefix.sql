SELECT q.ord, q.id, c.revision, c.deleted, CASE WHEN r.run_id IS NOT NULL THEN 1 END, r.status,
	r.created_at_ms, r.started_at_ms, r.finished_at_ms,
	r.owner_host_id, r.owner_pid, r.owner_nonce, r.heartbeat_at_ms,
	r.claim_host_id, r.claim_pid, r.claim_nonce, r.claimed_at_ms,
	r.state_json, r.parent_run_id, r.execution_parent_id, r.lineage_id, r.round_ordinal,
	r.cancel_requested_at_ms, r.cancel_acknowledgement_json,
	r.waiting_reason, r.waiting_wake_at_ms, r.waiting_token, NULL, r.waiting_request,
	CASE WHEN r.parent_run_id IS NULL THEN
		(SELECT e.parent_id FROM flows_run_parents e WHERE e.child_id = q.id ORDER BY e.seq, e.parent_id LIMIT 1) END
FROM (SELECT created_at_ms AS ord, run_id AS id FROM flows_runs
WHERE (json_extract(state_json, '$.flowName') IN (+$2, +$3) OR (json_extract(state_json, '$.flowName') >= +$4 AND json_extract(state_json, '$.flowName') < +$5))
  AND status = +$1 ORDER BY created_at_ms DESC, run_id DESC LIMIT +$6) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id
-- arguments: [failed audit ops billing- billing. 101]
