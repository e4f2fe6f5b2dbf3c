WITH RECURSIVE names (name, n) AS (
  SELECT (SELECT ((state_json::json ->> 'flowName') COLLATE "C") FROM flows_runs WHERE ((state_json::json ->> 'flowName') COLLATE "C") >= $1 AND ((state_json::json ->> 'flowName') IN ($2, $3) OR (((state_json::json ->> 'flowName') COLLATE "C") >= $4 AND ((state_json::json ->> 'flowName') COLLATE "C") < $5)) ORDER BY ((state_json::json ->> 'flowName') COLLATE "C") LIMIT 1), 1
  UNION ALL
  SELECT (SELECT ((state_json::json ->> 'flowName') COLLATE "C") FROM flows_runs WHERE ((state_json::json ->> 'flowName') COLLATE "C") > names.name AND ((state_json::json ->> 'flowName') IN ($2, $3) OR (((state_json::json ->> 'flowName') COLLATE "C") >= $4 AND ((state_json::json ->> 'flowName') COLLATE "C") < $5)) ORDER BY ((state_json::json ->> 'flowName') COLLATE "C") LIMIT 1), names.n + 1
  FROM names WHERE names.name IS NOT NULL AND names.n < $6
)
SELECT name FROM names WHERE name IS NOT NULL
-- arguments: [ audit ops billing- billing. 101]
