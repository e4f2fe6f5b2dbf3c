// A run's page: why it failed (when it did), where its time went (the
// timeline), its facts and state, its steps, its children and rounds, its
// inbound events and event log; all read again whenever the store moves.
import { html } from 'htm/preact';
import { useEffect } from 'preact/hooks';
import { query } from '../api.js';
import { RUN } from '../queries.js';
import { useLive, useNow } from '../live.js';
import { useConfig } from '../config.js';
import { runHref, withParam } from '../route.js';
import { fmtTime, age, duration, ownerText, lower } from '../format.js';
import { Status, Badge, RunLink, Errors, Field } from '../ui.js';
import { JsonView } from '../JsonView.js';
import { FailureSummary } from './FailureSummary.js';
import { Timeline } from './Timeline.js';
import { Steps } from './Steps.js';
import { StatusSummary } from './StatusSummary.js';
import { Level } from './RunTree.js';

function Rounds({ conn, r }) {
  const edges = conn?.edges ?? [];
  if (conn === null) return html`<p class="muted">Not available.</p>`;
  return html`${edges.length > 1 || r.params.get('rounds') ? html`<div class="table-wrap"><table id="rounds">
      <caption class="sr-only">Rounds of the lineage</caption>
      <thead><tr><th scope="col">Round</th><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
      <tbody>${edges.map((e) => html`<tr><td>${e.ordinal}</td><td><${RunLink} node=${e.node} /></td><td>${e.node?.status ? html`<${Status} s=${e.node.status} />` : ''}</td><td>${e.node?.createdAt ? fmtTime(e.node.createdAt) : ''}</td></tr>`)}</tbody>
    </table></div>` : ''}
    <nav class="pager" aria-label="Round pages">
      ${r.params.get('rounds') ? html`<a href=${withParam(r, 'rounds', '')}>First rounds</a>` : ''}
      ${conn?.pageInfo?.hasNextPage ? html`<a href=${withParam(r, 'rounds', conn.pageInfo.endCursor)} id="rounds-next" rel="next">More rounds</a>` : ''}
    </nav>`;
}

function Facts({ run, now, stale }) {
  return html`<dl class="facts" id="facts">
    <${Field} label="Flow">${run.flowName}<//>
    <${Field} label="Revision">${run.revision}<//>
    <${Field} label="Created">${fmtTime(run.createdAt)}<//>
    <${Field} label="Started">${fmtTime(run.startedAt)}<//>
    <${Field} label="Finished">${fmtTime(run.finishedAt)}<//>
    <${Field} label="Duration">${duration(run.startedAt ?? run.createdAt, run.finishedAt, now)}${run.finishedAt ? '' : ' so far'}<//>
    <${Field} label="Owner">${ownerText(run.owner)}<//>
    <${Field} label="Heartbeat">${run.heartbeatAt ? html`${fmtTime(run.heartbeatAt)} (${age(run.heartbeatAt, now)})${stale ? html` <${Badge} kind="stale" id="stale">stale<//>` : ''}` : '—'}<//>
    <${Field} label="Claim">${run.claim ? `${ownerText(run.claim.owner)} at ${fmtTime(run.claim.claimedAt)}` : '—'}<//>
    <${Field} label="Parent">${run.parent ? html`<${RunLink} node=${run.parent} />` : run.parentRunId ? html`<code>${run.parentRunId}</code>` : '—'}<//>
    <${Field} label="Lineage">${run.lineageId === run.id ? 'its own' : html`<a href=${runHref(run.lineageId)}><code>${run.lineageId}</code></a>`}, round ${run.roundOrdinal}<//>
    <${Field} label="Cancellation">${run.cancellation?.requestedAt ? html`requested ${fmtTime(run.cancellation.requestedAt)}; ${run.cancellation.acknowledgement ? `acknowledged ${fmtTime(run.cancellation.acknowledgement.observedAt)} by ${ownerText(run.cancellation.acknowledgement.owner)}` : 'not acknowledged yet'}` : 'not requested'}<//>
    <${Field} label="Waiting">${run.waiting ? html`<span id="waiting"><strong>${lower(run.waiting.kind)}</strong>: ${run.waiting.reason}${run.waiting.wakeAt ? ` · wakes ${fmtTime(run.waiting.wakeAt)} (${age(run.waiting.wakeAt, now)})` : ''}${run.waiting.tokenDigest ? html` · token sha-256 <code class="digest">${run.waiting.tokenDigest.slice(0, 16)}…</code>` : ''}</span>` : 'no'}<//>
  </dl>`;
}

function Inbound({ list }) {
  if (!list.length) return html`<p class="muted">None.</p>`;
  return html`<ul class="inbound" id="inbound">${list.map((e) => e && html`<li>
    <code>${e.id}</code> <strong>${e.eventName}</strong> sent ${fmtTime(e.createdAt)} · ${e.claimedBy ? html`claimed by <code>${e.claimedBy}</code> at ${fmtTime(e.claimedAt)}` : 'unclaimed'}
    ${e.hasPayload ? html`<details><summary>Payload</summary><${JsonView} value=${e.payload} label=${'Payload of ' + e.id} /></details>` : html` · <span class="muted">no payload</span>`}
  </li>`)}</ul>`;
}

export function RunView({ id, r, paused, setPosition, setMode }) {
  const now = useNow();
  const { staleAfterMs } = useConfig();
  const [st, mode] = useLive(async () => {
    const res = await query(RUN, { id, rounds: r.params.get('rounds'), steps: r.params.get('steps'), inbound: r.params.get('inbound'), events: r.params.get('events') });
    setPosition(res.position);
    return res;
  }, paused, id + '?' + r.params.toString());
  useEffect(() => setMode(mode), [mode]);
  useEffect(() => { document.title = `${id} · flowsnap`; }, [id]);
  const run = st.data?.run;
  if (!run) return html`<section><h1>Run <code>${id}</code></h1><${Errors} st=${st} />${st.loading ? html`<p aria-busy="true">Loading…</p>` : ''}</section>`;
  if (run.__typename === 'MissingRun') return html`<section><h1>Run <code>${id}</code></h1><${Errors} st=${st} /><p id="missing">${run.deleted ? `Deleted at revision ${run.deletedAtRevision}.` : 'No such run in this store.'}</p></section>`;
  const rev = st.position?.revision;
  const stale = run.status === 'RUNNING' && run.heartbeatAt && now - Date.parse(run.heartbeatAt) > staleAfterMs;
  return html`<article aria-labelledby="run-title">
    <h1 id="run-title">Run <code>${run.id}</code> <${Status} s=${run.status} />${' '}${stale ? html`<${Badge} kind="stale">stale<//>` : ''}${' '}${run.cancellation?.requestedAt && !run.finishedAt ? html`<${Badge}>cancel requested<//>` : ''}</h1>
    <p class="subtitle muted"><span>flow <strong>${run.flowName}</strong></span> <span>created ${age(run.createdAt, now)}</span> <span>${run.finishedAt ? `finished ${age(run.finishedAt, now)} after ${duration(run.startedAt ?? run.createdAt, run.finishedAt, now)}` : `open for ${duration(run.createdAt, null, now)}`}</span> <span>revision ${run.revision}</span></p>
    <${Errors} st=${st} />
    <${FailureSummary} run=${run} now=${now} />
    <section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2><${Timeline} run=${run} now=${now} />
      ${run.steps?.pageInfo?.hasNextPage ? html`<p class="muted">The timeline shows the first page of steps; <a href=${withParam(r, 'steps', run.steps.pageInfo.endCursor)}>more steps</a>.</p>` : ''}
    </section>
    <section aria-labelledby="facts-title"><h2 id="facts-title">Facts</h2><${Facts} run=${run} now=${now} stale=${stale} /></section>
    ${run.waiting?.request != null ? html`<details><summary>Waiting request</summary><${JsonView} value=${run.waiting.request} label="Waiting request" id="request" /></details>` : ''}
    <details open=${run.status === 'FAILED'}><summary>State</summary><${JsonView} value=${run.state} label="State" id="state" /></details>
    <div class="columns">
      <section aria-labelledby="children-title"><h2 id="children-title">Children</h2>
        <${StatusSummary} filter=${{ parentRunId: run.id }} urlFilter=${{ parentRunId: run.id }} label="children" id="children-summary" rev=${rev} />
        <${Level} id=${run.id} rev=${rev} root />
      </section>
      <section aria-labelledby="rounds-title"><h2 id="rounds-title">Rounds</h2>
        <${StatusSummary} filter=${{ lineageId: run.lineageId }} urlFilter=${{ lineageId: run.lineageId }} label="rounds" id="rounds-summary" rev=${rev} />
        <${Rounds} conn=${run.rounds} r=${r} />
      </section>
    </div>
    <section aria-labelledby="steps-title"><h2 id="steps-title">Steps</h2><${Steps} run=${run} now=${now} />
      <nav class="pager" aria-label="Step pages">${r.params.get('steps') ? html`<a href=${withParam(r, 'steps', '')}>First steps</a>` : ''}${run.steps?.pageInfo?.hasNextPage ? html`<a href=${withParam(r, 'steps', run.steps.pageInfo.endCursor)}>More steps</a>` : ''}</nav>
    </section>
    <section aria-labelledby="inbound-title"><h2 id="inbound-title">Inbound events</h2><${Inbound} list=${run.inboundEvents?.nodes ?? []} /></section>
    <section aria-labelledby="events-title"><h2 id="events-title">Event log</h2>
      ${(run.events?.nodes ?? []).length === 0 ? html`<p class="muted">None.</p>` : html`<ol class="events" id="events">${run.events.nodes.map((e) => e && html`<li><span class="muted">#${e.seq}</span> <strong>${e.type.toLowerCase()}</strong> ${fmtTime(e.recordedAt)}${e.cancellationReason ? ` — ${e.cancellationReason}` : ''}</li>`)}</ol>`}
    </section>
  </article>`;
}
