SELECT 0 AS w, p0.* FROM (SELECT e.created_at_ms AS ord, e.event_id AS id, e.run_id AS e_run, e.event_id AS e_id, e.event_name AS e_name, e.payload AS e_payload,
	e.created_at_ms AS e_created, e.claimed_by AS e_by, e.claimed_at_ms AS e_at
	FROM flows_inbound_events AS e
	WHERE e.run_id = +$1 AND (e.created_at_ms, e.event_id) > (+$2, +$3)
	ORDER BY e.created_at_ms, e.event_id LIMIT $4) AS p0
UNION ALL
SELECT 1 AS w, p1.* FROM (SELECT e.created_at_ms AS ord, e.event_id AS id, e.run_id AS e_run, e.event_id AS e_id, e.event_name AS e_name, e.payload AS e_payload,
	e.created_at_ms AS e_created, e.claimed_by AS e_by, e.claimed_at_ms AS e_at
	FROM flows_inbound_events AS e
	WHERE e.run_id = +$5 AND (e.created_at_ms, e.event_id) > (+$6, +$7)
	ORDER BY e.created_at_ms, e.event_id LIMIT $8) AS p1
ORDER BY 1, 2, 3
-- arguments: [anchor-a -1  101 anchor-b 7 x 11]
