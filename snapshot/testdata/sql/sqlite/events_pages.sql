SELECT 0 AS w, p0.* FROM (SELECT v.seq AS ord, '' AS id,
	v.run_id AS v_run, v.seq AS v_seq, v.recorded_at_ms AS v_at, v.type AS v_type, v.cancellation_reason AS v_reason
	FROM flows_run_events AS v
	WHERE v.run_id = +$1 AND v.seq > +$2
	ORDER BY v.seq LIMIT $3) AS p0
UNION ALL
SELECT 1 AS w, p1.* FROM (SELECT v.seq AS ord, '' AS id,
	v.run_id AS v_run, v.seq AS v_seq, v.recorded_at_ms AS v_at, v.type AS v_type, v.cancellation_reason AS v_reason
	FROM flows_run_events AS v
	WHERE v.run_id = +$4 AND v.seq > +$5
	ORDER BY v.seq LIMIT $6) AS p1
ORDER BY 1, 2, 3
-- arguments: [anchor-a -1 101 anchor-b 7 11]
