SELECT run_id, revision, deleted FROM flows_run_changes
WHERE revision > +$1 AND revision <= +$2
ORDER BY revision
LIMIT $3
