WITH k(id, sub) AS (SELECT p.k->>0 AS id, p.k->>1 AS sub FROM json_array_elements($1::json) AS p(k))
SELECT s.run_id AS s_run, s.step_id AS s_id, s.type AS s_type, s.created_at_ms AS s_created,
	s.state AS s_state, s.max_attempts AS s_max, s.target_wake_at_ms AS s_wake, s.event_name AS s_event,
	s.timeout_at_ms AS s_timeout, s.resolved_at_ms AS s_resolved, s.parent_step_id AS s_parent,
	la.state AS la_state, la.ended_at_ms AS la_ended, la.next_attempt_at_ms AS la_next,
	(SELECT count(*) FROM flows_step_attempts AS n WHERE n.run_id = s.run_id AND n.step_id = s.step_id) AS s_attempts,
	e.run_id AS e_run, e.event_id AS e_id, e.event_name AS e_name, e.payload AS e_payload,
	e.created_at_ms AS e_created, e.claimed_by AS e_by, e.claimed_at_ms AS e_at
FROM k JOIN flows_steps AS s ON s.run_id = k.id AND s.step_id = k.sub
LEFT JOIN flows_step_attempts AS la ON la.run_id = s.run_id AND la.attempt_id = (SELECT a.attempt_id FROM flows_step_attempts AS a
		WHERE a.run_id = s.run_id AND a.step_id = s.step_id
		ORDER BY a.started_at_ms DESC, a.attempt_id DESC LIMIT 1)
LEFT JOIN flows_inbound_events AS e ON e.run_id = s.run_id AND e.claimed_by = s.step_id
