SELECT (SELECT count(*) FROM (SELECT 1 AS one FROM flows_runs
WHERE (state_json::json ->> 'flowName') = $1
  AND finished_at_ms >= $2
  AND status = $3 ORDER BY finished_at_ms LIMIT $4) AS k0) AS n0,
(SELECT count(*) FROM (SELECT 1 AS one FROM flows_runs
WHERE (state_json::json ->> 'flowName') = $1
  AND finished_at_ms >= $2
  AND status = $5 ORDER BY finished_at_ms LIMIT $6) AS k1) AS n1
-- arguments: [billing 1000 completed 101 failed 101]
