// The top of a failed, timed-out or cancelled run's page: why it ended.
import { html } from 'htm/preact';
import { failure } from './failure.js';
import { fmtTime, age, lower } from '../format.js';

export function FailureSummary({ run, now }) {
  if (!['FAILED', 'CANCELLED'].includes(run.status)) return null;
  const { step, last, runErr, cancelReason } = failure(run);
  const title = run.status === 'CANCELLED' ? 'Cancelled' : step?.state === 'TIMED_OUT' ? 'Failed: a wait timed out' : 'Failed';
  const when = step?.resolvedAt ?? run.finishedAt;
  return html`<section class="failure" id="failure" aria-labelledby="failure-title">
    <h2 id="failure-title">${title}${when ? html` <span class="muted">${fmtTime(when)} (${age(when, now)})</span>` : ''}</h2>
    ${step ? html`<p>Step <a href=${'#step-' + encodeURIComponent(step.id)} onClick=${(e) => { e.preventDefault(); document.getElementById('step-' + step.id)?.scrollIntoView(); }}><code>${step.id}</code></a> (${lower(step.type)}) ${lower(step.state)}${step.__typename === 'RunStep' ? html` after <strong id="failure-attempts">${step.attemptCount} attempt${step.attemptCount === 1 ? '' : 's'}${step.maxAttempts ? ` of ${step.maxAttempts} allowed` : ' (unbounded)'}</strong>` : ''}${step.__typename === 'WaitStep' ? html` waiting for <code>${step.eventName}</code>${step.timeoutAt ? ` (timeout ${fmtTime(step.timeoutAt)})` : ''}` : ''}.</p>` : ''}
    ${last ? html`<p class="error-text" id="failure-error">${last.errorName ? html`<strong>${last.errorName}</strong>: ` : ''}${last.errorMessage}</p>` : ''}
    ${runErr && (!last || runErr.message !== last.errorMessage) ? html`<p class="error-text" id="failure-run-error">Run error: ${runErr.name ? html`<strong>${runErr.name}</strong>: ` : ''}${runErr.message ?? JSON.stringify(runErr)}</p>` : ''}
    ${run.status === 'CANCELLED' ? html`<p>${run.cancellation?.requestedAt ? `Cancellation requested ${fmtTime(run.cancellation.requestedAt)}` : 'Cancelled without a request'}${cancelReason ? html`: <span id="failure-reason">${cancelReason}</span>` : ''}.</p>` : ''}
    ${!step && !runErr && run.status === 'FAILED' ? html`<p class="muted">No failed step on this page of the journal and no error in the run's state.</p>` : ''}
  </section>`;
}
