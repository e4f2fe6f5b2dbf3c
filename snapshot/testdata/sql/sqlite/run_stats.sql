SELECT (SELECT count(*) FROM (SELECT finished_at_ms AS ord, run_id AS id FROM flows_runs
WHERE json_extract(state_json, '$.flowName') = $1
  AND finished_at_ms >= $2
  AND status = $3
  AND finished_at_ms IS NOT NULL ORDER BY finished_at_ms, run_id LIMIT $4) AS k0) AS n0,
(SELECT count(*) FROM (SELECT finished_at_ms AS ord, run_id AS id FROM flows_runs
WHERE json_extract(state_json, '$.flowName') = $1
  AND finished_at_ms >= $2
  AND status = $5
  AND finished_at_ms IS NOT NULL ORDER BY finished_at_ms, run_id LIMIT $6) AS k1) AS n1
-- arguments: [billing 1000 completed 101 failed 101]
