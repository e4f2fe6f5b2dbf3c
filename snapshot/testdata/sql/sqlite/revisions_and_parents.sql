WITH a(id) AS (SELECT value AS id FROM json_each($1)),
q(id) AS (SELECT a.id FROM a
	UNION ALL
	SELECT DISTINCT p.execution_parent_id FROM a JOIN flows_runs p ON p.run_id = a.id
	WHERE p.execution_parent_id IS NOT NULL AND p.execution_parent_id NOT IN (SELECT id FROM a))
SELECT q.id, c.revision, c.deleted,
	CASE WHEN c.revision IS NULL OR c.deleted <> 0 THEN (SELECT 1 FROM flows_runs r WHERE r.run_id = q.id) END
FROM q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
