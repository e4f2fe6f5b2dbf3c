WITH u AS (SELECT 0 AS w, p0.ord, p0.id FROM (SELECT seq AS ord, child_id AS id FROM flows_run_parents
	WHERE parent_id = $1 AND (seq, child_id) > ($2, $3)
	ORDER BY seq, child_id LIMIT $4) AS p0
UNION ALL
SELECT 1 AS w, p1.ord, p1.id FROM (SELECT COALESCE(round_ordinal, 0) AS ord, run_id AS id FROM flows_runs
	WHERE COALESCE(lineage_id, run_id) = (SELECT COALESCE(a.lineage_id, a.run_id) FROM flows_runs a WHERE a.run_id = $5)
	  AND COALESCE(round_ordinal, 0) >= $6
	  AND (COALESCE(round_ordinal, 0), run_id) > ($6, $7)
	ORDER BY COALESCE(round_ordinal, 0), run_id LIMIT $8) AS p1
UNION ALL
SELECT -1 AS w, 0 AS ord, ids.id FROM (SELECT unnest($9::text[]) AS id) AS ids)
SELECT q.w, q.ord, q.id, q.id, c.revision, c.deleted, CASE WHEN r.run_id IS NOT NULL THEN 1 END, r.status,
	r.created_at_ms, r.started_at_ms, r.finished_at_ms,
	r.owner_host_id, r.owner_pid, r.owner_nonce, r.heartbeat_at_ms,
	r.claim_host_id, r.claim_pid, r.claim_nonce, r.claimed_at_ms,
	r.state_json, r.parent_run_id, r.execution_parent_id, r.lineage_id, r.round_ordinal,
	r.cancel_requested_at_ms, r.cancel_acknowledgement_json,
	r.waiting_reason, r.waiting_wake_at_ms, NULL, r.waiting_token_digest, r.waiting_request,
	CASE WHEN r.parent_run_id IS NULL THEN
		(SELECT e.parent_id FROM flows_run_parents e WHERE e.child_id = q.id ORDER BY e.seq, e.parent_id LIMIT 1) END
FROM (SELECT u.w, u.ord, u.id FROM u
	UNION ALL
	SELECT -2, 0, pu.id FROM (SELECT DISTINCT p.execution_parent_id AS id FROM u CROSS JOIN flows_runs p
	WHERE p.run_id = u.id AND u.w >= -1 AND p.execution_parent_id IS NOT NULL
	  AND p.execution_parent_id NOT IN (SELECT u.id FROM u)) AS pu) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id
ORDER BY q.w, q.ord, q.id
-- arguments: [anchor-a -1  11 anchor-a -1  11 [anchor-a other]]
