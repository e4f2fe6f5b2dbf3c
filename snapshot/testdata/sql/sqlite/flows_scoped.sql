WITH RECURSIVE names (name, n) AS (
  SELECT (SELECT json_extract(state_json, '$.flowName') FROM flows_runs WHERE json_extract(state_json, '$.flowName') >= $1 AND (json_extract(state_json, '$.flowName') IN ($2, $3) OR (json_extract(state_json, '$.flowName') >= $4 AND json_extract(state_json, '$.flowName') < $5)) ORDER BY json_extract(state_json, '$.flowName') LIMIT 1), 1
  UNION ALL
  SELECT (SELECT json_extract(state_json, '$.flowName') FROM flows_runs WHERE json_extract(state_json, '$.flowName') > names.name AND (json_extract(state_json, '$.flowName') IN ($2, $3) OR (json_extract(state_json, '$.flowName') >= $4 AND json_extract(state_json, '$.flowName') < $5)) ORDER BY json_extract(state_json, '$.flowName') LIMIT 1), names.n + 1
  FROM names WHERE names.name IS NOT NULL AND names.n < $6
)
SELECT name FROM names WHERE name IS NOT NULL
-- arguments: [ audit ops billing- billing. 101]
