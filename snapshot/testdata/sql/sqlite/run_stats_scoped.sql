SELECT (SELECT count(*) FROM (SELECT 1 AS one FROM flows_runs
WHERE (json_extract(state_json, '$.flowName') IN (+$1, +$2) OR (json_extract(state_json, '$.flowName') >= +$3 AND json_extract(state_json, '$.flowName') < +$4))
  AND status = +$5 ORDER BY created_at_ms LIMIT +$6) AS k0) AS n0,
(SELECT count(*) FROM (SELECT 1 AS one FROM flows_runs
WHERE (json_extract(state_json, '$.flowName') IN (+$1, +$2) OR (json_extract(state_json, '$.flowName') >= +$3 AND json_extract(state_json, '$.flowName') < +$4))
  AND status = +$7 ORDER BY created_at_ms LIMIT +$8) AS k1) AS n1
-- arguments: [audit ops billing- billing. pending 101 running 101]
