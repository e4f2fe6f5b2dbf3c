WITH k(id, sub) AS (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS sub FROM json_each($1)),
t AS (
	SELECT a.run_id, a.step_id, a.attempt_id, a.started_at_ms, a.state, a.ended_at_ms,
		a.result_type, a.result_json, a.error_message, a.error_name, a.next_attempt_at_ms,
		ROW_NUMBER() OVER (PARTITION BY a.run_id, a.step_id ORDER BY a.started_at_ms, a.attempt_id) AS number,
		COUNT(*) OVER (PARTITION BY a.run_id, a.step_id) AS total
	FROM k JOIN flows_step_attempts AS a ON a.run_id = k.id AND a.step_id = k.sub)
SELECT run_id, step_id, attempt_id, started_at_ms, state, ended_at_ms,
	result_type, result_json, error_message, error_name, next_attempt_at_ms, number
FROM t WHERE number > total - $2
ORDER BY run_id, step_id, number
