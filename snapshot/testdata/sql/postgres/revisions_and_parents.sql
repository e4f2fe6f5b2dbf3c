WITH a(id) AS (SELECT unnest($1::text[]) AS id),
q(id) AS (SELECT a.id FROM a
	UNION ALL
	SELECT DISTINCT x.id FROM (SELECT (SELECT p.execution_parent_id FROM flows_runs p WHERE p.run_id = a.id) AS id
		FROM a WHERE TRUE) AS x
	WHERE x.id IS NOT NULL AND x.id NOT IN (SELECT a.id FROM a))
SELECT q.id, c.revision, c.deleted,
	CASE WHEN c.revision IS NULL OR c.deleted <> 0 THEN (SELECT 1 FROM flows_runs r WHERE r.run_id = q.id) END
FROM q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
