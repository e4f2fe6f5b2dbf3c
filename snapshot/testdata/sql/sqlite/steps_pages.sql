SELECT 0 AS w, p0.* FROM (SELECT s.created_at_ms AS ord, s.step_id AS id, s.run_id AS s_run, s.step_id AS s_id, s.type AS s_type, s.created_at_ms AS s_created,
	s.state AS s_state, s.max_attempts AS s_max, s.target_wake_at_ms AS s_wake, s.event_name AS s_event,
	s.timeout_at_ms AS s_timeout, s.resolved_at_ms AS s_resolved, s.parent_step_id AS s_parent,
	la.state AS la_state, la.ended_at_ms AS la_ended, la.next_attempt_at_ms AS la_next,
	(SELECT count(*) FROM flows_step_attempts AS n WHERE n.run_id = s.run_id AND n.step_id = s.step_id) AS s_attempts,
	e.run_id AS e_run, e.event_id AS e_id, e.event_name AS e_name, e.payload AS e_payload,
	e.created_at_ms AS e_created, e.claimed_by AS e_by, e.claimed_at_ms AS e_at
	FROM flows_steps AS s
LEFT JOIN flows_step_attempts AS la ON la.run_id = s.run_id AND la.attempt_id = (SELECT a.attempt_id FROM flows_step_attempts AS a
		WHERE a.run_id = s.run_id AND a.step_id = s.step_id
		ORDER BY a.started_at_ms DESC, a.attempt_id DESC LIMIT 1)
LEFT JOIN flows_inbound_events AS e ON e.run_id = s.run_id AND e.claimed_by = s.step_id
	WHERE s.run_id = +$1 AND (s.created_at_ms, s.step_id) > (+$2, +$3)
	ORDER BY s.created_at_ms, s.step_id LIMIT $4) AS p0
UNION ALL
SELECT 1 AS w, p1.* FROM (SELECT s.created_at_ms AS ord, s.step_id AS id, s.run_id AS s_run, s.step_id AS s_id, s.type AS s_type, s.created_at_ms AS s_created,
	s.state AS s_state, s.max_attempts AS s_max, s.target_wake_at_ms AS s_wake, s.event_name AS s_event,
	s.timeout_at_ms AS s_timeout, s.resolved_at_ms AS s_resolved, s.parent_step_id AS s_parent,
	la.state AS la_state, la.ended_at_ms AS la_ended, la.next_attempt_at_ms AS la_next,
	(SELECT count(*) FROM flows_step_attempts AS n WHERE n.run_id = s.run_id AND n.step_id = s.step_id) AS s_attempts,
	e.run_id AS e_run, e.event_id AS e_id, e.event_name AS e_name, e.payload AS e_payload,
	e.created_at_ms AS e_created, e.claimed_by AS e_by, e.claimed_at_ms AS e_at
	FROM flows_steps AS s
LEFT JOIN flows_step_attempts AS la ON la.run_id = s.run_id AND la.attempt_id = (SELECT a.attempt_id FROM flows_step_attempts AS a
		WHERE a.run_id = s.run_id AND a.step_id = s.step_id
		ORDER BY a.started_at_ms DESC, a.attempt_id DESC LIMIT 1)
LEFT JOIN flows_inbound_events AS e ON e.run_id = s.run_id AND e.claimed_by = s.step_id
	WHERE s.run_id = +$5 AND (s.created_at_ms, s.step_id) > (+$6, +$7)
	ORDER BY s.created_at_ms, s.step_id LIMIT $8) AS p1
ORDER BY 1, 2, 3
-- arguments: [anchor-a -1  101 anchor-b 7 x 11]
