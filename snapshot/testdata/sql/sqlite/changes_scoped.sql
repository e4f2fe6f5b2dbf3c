SELECT c.run_id, c.revision, c.deleted FROM flows_run_changes c
JOIN flows_runs r ON r.run_id = c.run_id
WHERE c.revision > +$1 AND c.revision <= +$2
  AND (json_extract(state_json, '$.flowName') IN ($4, $5) OR (json_extract(state_json, '$.flowName') >= $6 AND json_extract(state_json, '$.flowName') < $7))
ORDER BY c.revision
LIMIT $3
-- arguments: [10 20 101 audit ops billing- billing.]
