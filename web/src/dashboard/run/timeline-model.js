// What the timeline draws, worked out from a run's steps: one lane per
// step, each with its segments (attempts, backoff gaps between them, the time
// a step queued, sleeps and waits) on one time axis.
import { span, lower } from '../format.js';

const t = (s) => (s ? Date.parse(s) : null);

// lanes returns {t0, t1, lanes, longest}; now (or the run's finish, when
// it finished) stands for the end of whatever has not ended.
export function lanes(run, wall) {
  const now = run.finishedAt ? Date.parse(run.finishedAt) : wall;
  const steps = (run.steps?.nodes ?? []).filter(Boolean);
  const out = [];
  let t0 = t(run.createdAt);
  let t1 = now;
  for (const s of steps) {
    const created = t(s.createdAt);
    const end = t(s.resolvedAt) ?? now;
    const segs = [];
    const marks = [];
    let overdue = false;
    if (s.__typename === 'RunStep') {
      const atts = (s.attempts ?? []).filter(Boolean);
      const firstStart = atts.length ? t(atts[0].startedAt) : end;
      if (firstStart > created) segs.push({ kind: 'queued', from: created, to: firstStart, text: `queued ${span(firstStart - created)} before its ${atts.length ? 'first shown attempt' : 'first attempt'}` });
      atts.forEach((a, i) => {
        const from = t(a.startedAt);
        const to = t(a.endedAt) ?? now;
        const err = a.errorMessage ? ` — ${a.errorName ? a.errorName + ': ' : ''}${a.errorMessage}` : '';
        segs.push({ kind: 'attempt', state: a.state.toLowerCase(), from, to, text: `attempt ${a.number}${s.maxAttempts ? ` of ${s.maxAttempts}` : ''}, ${lower(a.state)}, ${span(to - from)}${a.endedAt ? '' : ' so far'}${err}` });
        if (a.state === 'FAILED' && a.nextAttemptAt) {
          const next = atts[i + 1] ? t(atts[i + 1].startedAt) : Math.max(t(a.nextAttemptAt), Math.min(now, t(a.nextAttemptAt)));
          if (next > to) segs.push({ kind: 'backoff', from: to, to: next, text: `backoff ${span(next - to)} before attempt ${a.number + 1}${atts[i + 1] ? '' : ' (due ' + span(Math.max(0, t(a.nextAttemptAt) - now)) + ' from now)'}` });
        }
      });
    } else if (s.__typename === 'SleepStep') {
      segs.push({ kind: 'sleep', from: created, to: end, text: `sleep ${span(end - created)}${s.resolvedAt ? '' : ' so far'}, until ${s.wakeAt}` });
      marks.push({ kind: 'wake', at: t(s.wakeAt), text: `wakes at ${s.wakeAt}` });
    } else if (s.__typename === 'WaitStep') {
      overdue = !run.finishedAt && s.state === 'WAITING' && !!s.timeoutAt && t(s.timeoutAt) < now;
      segs.push({ kind: 'wait', overdue, from: created, to: end, text: `wait for ${s.eventName} ${span(end - created)}${s.resolvedAt ? `, ${lower(s.state)}` : ' so far'}${overdue ? `, overdue: its timeout passed ${span(now - t(s.timeoutAt))} ago` : ''}` });
      if (s.timeoutAt) marks.push({ kind: 'timeout', at: t(s.timeoutAt), text: `times out at ${s.timeoutAt}` });
    }
    for (const g of segs) { t0 = Math.min(t0, g.from); t1 = Math.max(t1, g.to); }
    out.push({ step: s, segs, marks, overdue, took: end - created, current: run.currentStep?.id === s.id });
  }
  const longest = out.filter((l) => !l.step.parentStepId).reduce((a, b) => (!a || b.took > a.took ? b : a), null);
  return { t0, t1: Math.max(t1, t0 + 1), lanes: out, longest };
}

const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 1209600, 2592000].map((s) => s * 1000);

// ticks are the offsets from t0 to mark on the axis, at most max of them.
export function ticks(t0, t1, max = 5) {
  const len = t1 - t0;
  const step = STEPS.find((s) => len / s <= max) ?? len / max;
  const out = [];
  for (let x = 0; x <= len; x += step) out.push(x);
  return out;
}
