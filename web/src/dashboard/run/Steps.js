// The journal's steps as text: each step with its times, attempts, errors
// and retry times, the current step and overdue waits marked.
import { html } from 'htm/preact';
import { fmtTime, age, duration, lower } from '../format.js';
import { Badge } from '../ui.js';
import { JsonView } from '../JsonView.js';

function Attempt({ a, now }) {
  return html`<li class=${'attempt attempt-' + a.state.toLowerCase()}>
    #${a.number} <span class=${'state state-' + a.state.toLowerCase()}>${lower(a.state)}</span> ${fmtTime(a.startedAt)} · ${duration(a.startedAt, a.endedAt, now)}
    ${a.resultType ? html` · result ${lower(a.resultType)}` : ''}
    ${a.errorMessage ? html`<div class="error-text">${a.errorName ? html`<strong>${a.errorName}</strong>: ` : ''}${a.errorMessage}</div>` : ''}
    ${a.nextAttemptAt ? html`<div>retry at ${fmtTime(a.nextAttemptAt)}</div>` : ''}
    ${a.resultType === 'JSON' ? html`<details><summary>Result</summary><${JsonView} value=${a.result} label="Result" /></details>` : ''}
  </li>`;
}

function Step({ s, current, now, finished }) {
  const overdue = !finished && s.__typename === 'WaitStep' && s.state === 'WAITING' && s.timeoutAt && Date.parse(s.timeoutAt) < now;
  return html`<li class=${'step step-' + s.state.toLowerCase() + (current ? ' current' : '')} id=${'step-' + s.id}>
    <div class="step-head"><strong><code>${s.id}</code></strong> <span class="muted">${lower(s.type)}</span> <span class=${'state state-' + s.state.toLowerCase()}>${lower(s.state)}</span>${' '}
      ${current ? html`<${Badge} kind="current">current<//>` : ''}${' '}${overdue ? html`<${Badge} kind="overdue">overdue<//>` : ''}
      ${s.parentStepId ? html` <span class="muted">in <code>${s.parentStepId}</code></span>` : ''}</div>
    <div class="muted">created ${fmtTime(s.createdAt)}${s.resolvedAt ? ` · resolved ${fmtTime(s.resolvedAt)} (${duration(s.createdAt, s.resolvedAt, now)})` : ` · open for ${duration(s.createdAt, null, now)}`}</div>
    ${s.__typename === 'SleepStep' ? html`<div>wakes ${fmtTime(s.wakeAt)} (${age(s.wakeAt, now)})</div>` : ''}
    ${s.__typename === 'WaitStep' ? html`<div>waits for event <code>${s.eventName}</code>${s.timeoutAt ? ` · times out ${fmtTime(s.timeoutAt)} (${age(s.timeoutAt, now)})` : ''}${s.claimedEvent ? html` · claimed <code>${s.claimedEvent.id}</code>` : ''}</div>` : ''}
    ${s.__typename === 'RunStep' ? html`<div>${s.attemptCount} attempt${s.attemptCount === 1 ? '' : 's'}${s.maxAttempts ? ` of at most ${s.maxAttempts}` : ''}${s.nextAttemptAt ? ` · next attempt ${fmtTime(s.nextAttemptAt)} (${age(s.nextAttemptAt, now)})` : ''}</div>
      ${s.attempts?.length ? html`<ol class="attempts">${s.attempts.map((a) => a && html`<${Attempt} a=${a} now=${now} />`)}</ol>` : ''}` : ''}
  </li>`;
}

export function Steps({ run, now }) {
  const nodes = run.steps?.nodes ?? [];
  if (!nodes.length) return html`<p class="muted">No steps.</p>`;
  return html`<ol class="steps" id="steps">${nodes.map((s) => (s ? html`<${Step} s=${s} current=${run.currentStep?.id === s.id} now=${now} finished=${!!run.finishedAt} />` : html`<li class="muted">(unreadable step)</li>`))}</ol>`;
}
