// What went wrong with a run, from its journal: the step that failed for
// good (or the wait that timed out), its last error and attempts.
export function failure(run) {
  const steps = (run.steps?.nodes ?? []).filter(Boolean);
  let step = null;
  for (const s of steps) if (s.state === 'FAILED' || s.state === 'TIMED_OUT') step = s;
  const atts = step?.attempts?.filter(Boolean) ?? [];
  const last = [...atts].reverse().find((a) => a.state === 'FAILED') ?? null;
  const runErr = run.state && typeof run.state === 'object' && run.state.error && typeof run.state.error === 'object' ? run.state.error : null;
  const cancelReason = (run.events?.nodes ?? []).filter((e) => e?.cancellationReason).map((e) => e.cancellationReason).pop() ?? null;
  return { step, last, runErr, cancelReason };
}
