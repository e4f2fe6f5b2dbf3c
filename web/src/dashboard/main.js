// The flowsnap dashboard: the runs list and the run page, each at its own
// URL (hash routing, so a link can be shared), kept live by subscriptions.
import { render, Component } from 'preact';
import { useEffect, useState, useCallback, useRef } from 'preact/hooks';
import { html } from 'htm/preact';
import { endpoint, query, subscribe } from './api.js';
import { STATUSES, WAITING_KINDS, LIST, RUN, LIVE_POSITION, LIVE_RUN, POSITION } from './queries.js';

// A running run whose heartbeat is older than this is marked stale.
const STALE_MS = 30_000;
const PAGE = 25;

// route reads the view and its parameters from location.hash:
// "#/" or "#/?status=FAILED" is the list, "#/run/ID?children=CURSOR" a run.
function route() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [path, qs = ''] = h.split('?');
  const params = new URLSearchParams(qs);
  const m = path.match(/^\/run\/(.+)$/);
  if (m) return { view: 'run', id: decodeURIComponent(m[1]), params };
  return { view: 'list', params };
}

function href(path, params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const qs = p.toString();
  const api = new URLSearchParams(location.search).get('api');
  return (api ? `?api=${encodeURIComponent(api)}` : location.pathname === '/' ? '' : location.pathname) + '#' + path + (qs ? '?' + qs : '');
}
const runHref = (id) => href('/run/' + encodeURIComponent(id));

function useRoute() {
  const [r, setR] = useState(route);
  useEffect(() => {
    const on = () => setR(route());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return r;
}

// --- formatting ---------------------------------------------------------

const fmtTime = (t) => (t ? t.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '—');
function age(t, now) {
  if (!t) return '';
  const ms = now - Date.parse(t);
  const s = Math.round(Math.abs(ms) / 1000);
  const txt = s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : s < 86400 ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m` : `${Math.floor(s / 86400)}d`;
  return ms >= 0 ? `${txt} ago` : `in ${txt}`;
}
function duration(a, b, now) {
  if (!a) return '—';
  const ms = (b ? Date.parse(b) : now) - Date.parse(a);
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  return s < 120 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}
const ownerText = (o) => (o ? `${o.hostId} pid ${o.pid} (${o.nonce})` : '—');
const json = (v) => JSON.stringify(v, null, 2);

function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

const Status = ({ s }) => html`<span class=${'status status-' + s.toLowerCase()}>${s.toLowerCase()}</span>`;

function RunLink({ node }) {
  if (!node) return html`<span class="muted">(unreadable)</span>`;
  if (node.__typename === 'MissingRun') return html`<span class="muted"><code>${node.id}</code> ${node.deleted ? `deleted at revision ${node.deletedAtRevision}` : 'missing'}</span>`;
  return html`<a href=${runHref(node.id)}><code>${node.id}</code></a>`;
}

// --- live data ------------------------------------------------------------

// useLive runs load() now and again whenever live (the subscription doc)
// reports a change, unless paused; without subscriptions it polls.
function useLive(load, liveDoc, liveVars, paused, key) {
  const [state, setState] = useState({ loading: true });
  const [mode, setMode] = useState('subscription');
  const seq = useRef(0);
  const refresh = useCallback(async () => {
    const n = ++seq.current;
    try {
      const r = await load();
      if (n === seq.current) setState({ ...r, loading: false });
    } catch (err) {
      if (n === seq.current) setState((s) => ({ ...s, loading: false, failure: err.message }));
    }
  }, [key]);
  useEffect(() => {
    setState({ loading: true });
    refresh();
  }, [key]);
  useEffect(() => {
    if (paused) return;
    let timer = null;
    let pending = false;
    // Coalesce bursts of changes into one reload every half second.
    const schedule = () => {
      if (timer) { pending = true; return; }
      refresh();
      timer = setTimeout(function tick() {
        timer = null;
        if (pending) { pending = false; schedule(); }
      }, 500);
    };
    let first = true;
    let stop = subscribe(liveDoc, liveVars, {
      next: () => { if (first) { first = false; return; } schedule(); },
      error: () => {
        setMode('polling');
        stop = () => {};
        const poll = setInterval(refresh, 2000);
        stop = () => clearInterval(poll);
      },
    });
    setMode('subscription');
    refresh();
    return () => { stop(); clearTimeout(timer); };
  }, [key, paused]);
  return [state, mode, refresh];
}

// --- the list ---------------------------------------------------------------

function filterFrom(params) {
  const f = {};
  const list = (k) => (params.get(k) ? params.get(k).split(',').filter(Boolean) : null);
  if (list('status')) f.status = list('status');
  if (list('waitingKind')) f.waitingKind = list('waitingKind');
  for (const k of ['flowName', 'parentRunId', 'executionParentId', 'lineageId', 'waitingReason']) if (params.get(k)) f[k] = params.get(k);
  for (const k of ['createdAfter', 'createdBefore']) if (params.get(k)) f[k] = new Date(params.get(k) + (params.get(k).endsWith('Z') ? '' : 'Z')).toISOString();
  if (params.get('rootsOnly') === '1') f.rootsOnly = true;
  if (params.get('cancelRequested') === '1') f.cancelRequested = true;
  if (params.get('stale') === '1') f.heartbeatBefore = new Date(Date.now() - STALE_MS).toISOString();
  return f;
}

// Filters is rendered again only when the URL's filter changes, so a live
// update never wipes what a person is typing.
class Filters extends Component {
  shouldComponentUpdate(next) {
    return next.params.toString() !== this.props.params.toString();
  }
  render({ params }) {
    return html`<${FilterForm} key=${params.toString()} params=${params} />`;
  }
}

function FilterForm({ params }) {
  const submit = (e) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const p = {};
    for (const k of ['status', 'waitingKind']) p[k] = fd.getAll(k).join(',');
    for (const k of ['flowName', 'parentRunId', 'executionParentId', 'lineageId', 'waitingReason', 'createdAfter', 'createdBefore', 'order']) p[k] = (fd.get(k) ?? '').trim();
    for (const k of ['rootsOnly', 'cancelRequested', 'stale']) p[k] = fd.get(k) ? '1' : '';
    if (p.order === 'NEWEST_FIRST') p.order = '';
    location.hash = href('/', p).split('#')[1];
  };
  const has = (k, v) => (params.get(k) ?? '').split(',').includes(v);
  const text = (k, label, placeholder = '') => html`<label>${label}<input name=${k} id=${'f-' + k} value=${params.get(k) ?? ''} placeholder=${placeholder} autocomplete="off" /></label>`;
  return html`<form class="filters" onSubmit=${submit} aria-label="Filter runs">
    <fieldset><legend>Status</legend>
      ${STATUSES.map((s) => html`<label class="check"><input type="checkbox" name="status" value=${s} checked=${has('status', s)} /> ${s.toLowerCase()}</label>`)}
    </fieldset>
    <fieldset><legend>Waiting kind</legend>
      ${WAITING_KINDS.map((s) => html`<label class="check"><input type="checkbox" name="waitingKind" value=${s} checked=${has('waitingKind', s)} /> ${s.toLowerCase()}</label>`)}
    </fieldset>
    <div class="fields">
      ${text('flowName', 'Flow', 'e.g. batch-import')}
      ${text('parentRunId', 'Parent run id')}
      ${text('executionParentId', 'Effective parent id')}
      ${text('lineageId', 'Lineage id')}
      ${text('waitingReason', 'Waiting reason', 'e.g. approval')}
      <label>Created at or after<input type="datetime-local" step="1" name="createdAfter" value=${params.get('createdAfter') ?? ''} /></label>
      <label>Created before<input type="datetime-local" step="1" name="createdBefore" value=${params.get('createdBefore') ?? ''} /></label>
      <label>Order<select name="order">
        <option value="NEWEST_FIRST" selected=${params.get('order') !== 'OLDEST_FIRST'}>newest first</option>
        <option value="OLDEST_FIRST" selected=${params.get('order') === 'OLDEST_FIRST'}>oldest first</option>
      </select></label>
    </div>
    <div class="flags">
      <label class="check"><input type="checkbox" name="rootsOnly" checked=${params.get('rootsOnly') === '1'} /> roots only</label>
      <label class="check"><input type="checkbox" name="cancelRequested" checked=${params.get('cancelRequested') === '1'} /> cancellation requested</label>
      <label class="check"><input type="checkbox" name="stale" checked=${params.get('stale') === '1'} /> stale heartbeat (over ${STALE_MS / 1000}s)</label>
    </div>
    <div class="actions"><button type="submit" id="apply">Apply filters</button> <a href=${href('/')}>Clear</a></div>
  </form>`;
}

function ListView({ params, paused, setPosition, setMode }) {
  const now = useNow();
  const key = params.toString();
  const [st, mode] = useLive(async () => {
    const filter = filterFrom(params);
    const vars = { filter, first: PAGE, after: params.get('after') || null, order: params.get('order') || 'NEWEST_FIRST' };
    for (const s of STATUSES) vars['c' + s] = { ...filter, status: filter.status ? filter.status.filter((x) => x === s) : [s] };
    const r = await query(LIST, vars);
    setPosition(r.position);
    return r;
  }, LIVE_POSITION, {}, paused, key);
  useEffect(() => setMode(mode), [mode]);
  const d = st.data;
  const conn = d?.listRuns;
  const edges = conn?.edges ?? [];
  const count = (c) => (c ? `${c.count}${c.capped ? '+' : ''}` : '…');
  const statusHref = (s) => href('/', { ...Object.fromEntries(params), status: s, after: '' });
  return html`<section aria-labelledby="list-title">
    <h1 id="list-title">Runs</h1>
    <nav class="counts" aria-label="Counts by status">
      <a href=${href('/', { ...Object.fromEntries(params), status: '', after: '' })} class="count">all <strong>${count(d?.total)}</strong></a>
      ${STATUSES.map((s) => html`<a href=${statusHref(s)} class=${'count status-' + s.toLowerCase()} data-status=${s}>${s.toLowerCase()} <strong>${count(d?.[s])}</strong></a>`)}
    </nav>
    <details open=${[...params.keys()].some((k) => k !== 'after')}><summary>Filters</summary><${Filters} params=${params} /></details>
    <${Errors} st=${st} />
    <div class="table-wrap"><table class="runs">
      <caption class="sr-only">Runs, ${params.get('order') === 'OLDEST_FIRST' ? 'oldest' : 'newest'} first</caption>
      <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Flow</th><th scope="col">Created</th><th scope="col">Waiting</th><th scope="col">Parent</th></tr></thead>
      <tbody>
        ${edges.map(({ node }) => node && node.__typename === 'Run' ? html`<tr>
          <td><a href=${runHref(node.id)} class="run-link"><code>${node.id}</code></a></td>
          <td><${Status} s=${node.status} />${node.status === 'RUNNING' && node.heartbeatAt && now - Date.parse(node.heartbeatAt) > STALE_MS ? html` <span class="stale">stale</span>` : ''}${node.cancellation?.requestedAt ? html` <span class="badge">cancel requested</span>` : ''}</td>
          <td>${node.flowName}</td>
          <td><time datetime=${node.createdAt} title=${fmtTime(node.createdAt)}>${age(node.createdAt, now)}</time></td>
          <td>${node.waiting ? `${node.waiting.kind.toLowerCase()}: ${node.waiting.reason}` : ''}</td>
          <td>${node.parentRunId ? html`<a href=${runHref(node.parentRunId)}><code>${node.parentRunId}</code></a>` : ''}</td>
        </tr>` : html`<tr><td colspan="6"><${RunLink} node=${node} /></td></tr>`)}
        ${!st.loading && edges.length === 0 ? html`<tr><td colspan="6" class="muted">No runs match.</td></tr>` : ''}
      </tbody>
    </table></div>
    <nav class="pager" aria-label="Pages">
      ${params.get('after') ? html`<a href=${href('/', { ...Object.fromEntries(params), after: '' })} id="first-page">First page</a>` : ''}
      ${conn?.pageInfo?.hasNextPage ? html`<a href=${href('/', { ...Object.fromEntries(params), after: conn.pageInfo.endCursor })} id="next-page" rel="next">Next page</a>` : ''}
    </nav>
  </section>`;
}

function Errors({ st }) {
  const msgs = [...(st.failure ? [st.failure] : []), ...(st.errors ?? []).map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}${e.path ? ' (at ' + e.path.join('.') + ')' : ''}`)];
  if (!msgs.length) return null;
  return html`<div role="alert" class="errors">${msgs.map((m) => html`<p>${m}</p>`)}</div>`;
}

// --- the run page -------------------------------------------------------------

function Field({ label, children }) {
  return html`<div class="field"><dt>${label}</dt><dd>${children}</dd></div>`;
}

function RunTable({ conn, label, id, params, param }) {
  const edges = conn?.edges ?? [];
  return html`<section aria-labelledby=${id + '-title'}>
    <h2 id=${id + '-title'}>${label}</h2>
    ${conn === null ? html`<p class="muted">Not available.</p>` : edges.length === 0 ? html`<p class="muted">None.</p>` : html`<div class="table-wrap"><table id=${id}>
      <thead><tr><th scope="col">#</th><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Flow</th></tr></thead>
      <tbody>${edges.map((e) => html`<tr><td>${e.ordinal}</td><td><${RunLink} node=${e.node} /></td><td>${e.node?.status ? html`<${Status} s=${e.node.status} />` : ''}</td><td>${e.node?.flowName ?? ''}</td></tr>`)}</tbody>
    </table></div>`}
    <nav class="pager" aria-label=${label + ' pages'}>
      ${params.get(param) ? html`<a href=${href(location.hash.slice(1).split('?')[0], { ...Object.fromEntries(params), [param]: '' })}>First page</a>` : ''}
      ${conn?.pageInfo?.hasNextPage ? html`<a href=${href(location.hash.slice(1).split('?')[0], { ...Object.fromEntries(params), [param]: conn.pageInfo.endCursor })} id=${id + '-next'} rel="next">Next page</a>` : ''}
    </nav>
  </section>`;
}

function Steps({ run, now }) {
  const nodes = run.steps?.nodes ?? [];
  if (!nodes.length) return html`<p class="muted">No steps.</p>`;
  return html`<ol class="timeline" id="steps">${nodes.map((s) => s ? html`<li class=${'step step-' + s.state.toLowerCase() + (run.currentStep?.id === s.id ? ' current' : '')}>
    <div class="step-head"><strong><code>${s.id}</code></strong> <span class="muted">${s.type.toLowerCase()}</span> <span class=${'state state-' + s.state.toLowerCase()}>${s.state.toLowerCase().replace('_', ' ')}</span>
      ${run.currentStep?.id === s.id ? html`<span class="badge">current</span>` : ''}
      ${s.parentStepId ? html` <span class="muted">in <code>${s.parentStepId}</code></span>` : ''}</div>
    <div class="muted">created ${fmtTime(s.createdAt)}${s.resolvedAt ? ` · resolved ${fmtTime(s.resolvedAt)} (${duration(s.createdAt, s.resolvedAt, now)})` : ''}</div>
    ${s.__typename === 'SleepStep' ? html`<div>wakes ${fmtTime(s.wakeAt)} (${age(s.wakeAt, now)})</div>` : ''}
    ${s.__typename === 'WaitStep' ? html`<div>waits for event <code>${s.eventName}</code>${s.timeoutAt ? ` · times out ${fmtTime(s.timeoutAt)}` : ''}${s.claimedEvent ? html` · claimed <code>${s.claimedEvent.id}</code>` : ''}</div>` : ''}
    ${s.__typename === 'RunStep' ? html`<div>${s.attemptCount} attempt${s.attemptCount === 1 ? '' : 's'}${s.maxAttempts ? ` of at most ${s.maxAttempts}` : ''}${s.nextAttemptAt ? ` · next attempt ${fmtTime(s.nextAttemptAt)} (${age(s.nextAttemptAt, now)})` : ''}</div>
      ${s.attempts?.length ? html`<ol class="attempts">${s.attempts.map((a) => a && html`<li class=${'attempt attempt-' + a.state.toLowerCase()}>
        #${a.number} <span class=${'state state-' + a.state.toLowerCase()}>${a.state.toLowerCase()}</span> ${fmtTime(a.startedAt)} · ${duration(a.startedAt, a.endedAt, now)}
        ${a.resultType ? html` · result ${a.resultType.toLowerCase()}` : ''}
        ${a.errorMessage ? html`<div class="error-text">${a.errorName ? html`<strong>${a.errorName}</strong>: ` : ''}${a.errorMessage}</div>` : ''}
        ${a.nextAttemptAt ? html`<div>retry at ${fmtTime(a.nextAttemptAt)}</div>` : ''}
      </li>`)}</ol>` : ''}` : ''}
  </li>` : html`<li class="muted">(unreadable step)</li>`)}</ol>`;
}

function RunView({ id, params, paused, setPosition, setMode }) {
  const now = useNow();
  const key = id + '?' + params.toString();
  const [st, mode] = useLive(async () => {
    const r = await query(RUN, { id, children: params.get('children'), rounds: params.get('rounds'), steps: params.get('steps'), inbound: params.get('inbound'), events: params.get('events') });
    setPosition(r.position);
    return r;
  }, LIVE_RUN, { id }, paused, key);
  useEffect(() => setMode(mode), [mode]);
  const run = st.data?.run;
  useEffect(() => { document.title = `${id} · flowsnap`; }, [id]);
  if (!run) return html`<section><h1>Run <code>${id}</code></h1><${Errors} st=${st} />${st.loading ? html`<p aria-busy="true">Loading…</p>` : ''}</section>`;
  if (run.__typename === 'MissingRun') return html`<section><h1>Run <code>${id}</code></h1><${Errors} st=${st} /><p id="missing">${run.deleted ? `Deleted at revision ${run.deletedAtRevision}.` : 'No such run in this store.'}</p></section>`;
  const hb = run.heartbeatAt ? now - Date.parse(run.heartbeatAt) : null;
  const stale = run.status === 'RUNNING' && hb !== null && hb > STALE_MS;
  const inbound = run.inboundEvents?.nodes ?? [];
  const events = run.events?.nodes ?? [];
  return html`<article aria-labelledby="run-title">
    <h1 id="run-title">Run <code>${run.id}</code> <${Status} s=${run.status} /></h1>
    <${Errors} st=${st} />
    <dl class="facts" id="facts">
      <${Field} label="Flow">${run.flowName}<//>
      <${Field} label="Revision">${run.revision}<//>
      <${Field} label="Created">${fmtTime(run.createdAt)}<//>
      <${Field} label="Started">${fmtTime(run.startedAt)}<//>
      <${Field} label="Finished">${fmtTime(run.finishedAt)}<//>
      <${Field} label="Duration">${duration(run.startedAt ?? run.createdAt, run.finishedAt, now)}<//>
      <${Field} label="Owner">${ownerText(run.owner)}<//>
      <${Field} label="Heartbeat">${run.heartbeatAt ? html`${fmtTime(run.heartbeatAt)} (${age(run.heartbeatAt, now)})${stale ? html` <span class="stale" id="stale">stale</span>` : ''}` : '—'}<//>
      <${Field} label="Claim">${run.claim ? `${ownerText(run.claim.owner)} at ${fmtTime(run.claim.claimedAt)}` : '—'}<//>
      <${Field} label="Parent">${run.parent ? html`<${RunLink} node=${run.parent} />` : run.parentRunId ? html`<code>${run.parentRunId}</code>` : '—'}<//>
      <${Field} label="Lineage">${run.lineageId === run.id ? 'its own' : html`<a href=${runHref(run.lineageId)}><code>${run.lineageId}</code></a>`}, round ${run.roundOrdinal}<//>
      <${Field} label="Cancellation">${run.cancellation?.requestedAt ? html`requested ${fmtTime(run.cancellation.requestedAt)}; ${run.cancellation.acknowledgement ? `acknowledged ${fmtTime(run.cancellation.acknowledgement.observedAt)} by ${ownerText(run.cancellation.acknowledgement.owner)}` : 'not acknowledged yet'}` : 'not requested'}<//>
      <${Field} label="Waiting">${run.waiting ? html`<span id="waiting"><strong>${run.waiting.kind.toLowerCase()}</strong>: ${run.waiting.reason}${run.waiting.wakeAt ? ` · wakes ${fmtTime(run.waiting.wakeAt)} (${age(run.waiting.wakeAt, now)})` : ''}${run.waiting.tokenDigest ? html` · token sha-256 <code class="digest">${run.waiting.tokenDigest.slice(0, 16)}…</code>` : ''}</span>` : 'no'}<//>
    </dl>
    ${run.waiting?.request != null ? html`<details><summary>Waiting request</summary><pre>${json(run.waiting.request)}</pre></details>` : ''}
    <details><summary>State</summary><pre id="state">${json(run.state)}</pre></details>
    <section aria-labelledby="steps-title"><h2 id="steps-title">Steps</h2><${Steps} run=${run} now=${now} />
      <nav class="pager" aria-label="Step pages">${run.steps?.pageInfo?.hasNextPage ? html`<a href=${href('/run/' + encodeURIComponent(id), { ...Object.fromEntries(params), steps: run.steps.pageInfo.endCursor })}>More steps</a>` : ''}</nav>
    </section>
    <div class="columns">
      <${RunTable} conn=${run.children} label="Children" id="children" params=${params} param="children" />
      <${RunTable} conn=${run.rounds} label="Rounds" id="rounds" params=${params} param="rounds" />
    </div>
    <section aria-labelledby="inbound-title"><h2 id="inbound-title">Inbound events</h2>
      ${inbound.length === 0 ? html`<p class="muted">None.</p>` : html`<div class="table-wrap"><table id="inbound">
        <thead><tr><th scope="col">Event</th><th scope="col">Name</th><th scope="col">Sent</th><th scope="col">Claimed by</th><th scope="col">Payload</th></tr></thead>
        <tbody>${inbound.map((e) => e && html`<tr><td><code>${e.id}</code></td><td>${e.eventName}</td><td>${fmtTime(e.createdAt)}</td><td>${e.claimedBy ? html`<code>${e.claimedBy}</code> at ${fmtTime(e.claimedAt)}` : 'unclaimed'}</td><td>${e.hasPayload ? html`<code>${JSON.stringify(e.payload)}</code>` : html`<span class="muted">none</span>`}</td></tr>`)}</tbody>
      </table></div>`}
    </section>
    <section aria-labelledby="events-title"><h2 id="events-title">Event log</h2>
      ${events.length === 0 ? html`<p class="muted">None.</p>` : html`<ol class="events" id="events">${events.map((e) => e && html`<li><span class="muted">#${e.seq}</span> <strong>${e.type.toLowerCase()}</strong> ${fmtTime(e.recordedAt)}${e.cancellationReason ? ` — ${e.cancellationReason}` : ''}</li>`)}</ol>`}
    </section>
  </article>`;
}

// --- the frame ------------------------------------------------------------------

function App() {
  const r = useRoute();
  const [paused, setPaused] = useState(false);
  const [position, setPosition] = useState(null);
  const [mode, setMode] = useState('subscription');
  const main = useRef();
  useEffect(() => {
    if (r.view === 'list') document.title = 'Runs · flowsnap';
    main.current?.focus({ preventScroll: true });
    scrollTo(0, 0);
  }, [r.view, r.id]);
  useEffect(() => {
    // "/" focuses the first filter field, as in many dashboards.
    const on = (e) => {
      if (e.key === '/' && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName)) {
        const f = document.getElementById('f-flowName');
        if (f) { e.preventDefault(); f.closest('details').open = true; f.focus(); }
      }
    };
    addEventListener('keydown', on);
    return () => removeEventListener('keydown', on);
  }, []);
  const props = { params: r.params, paused, setPosition, setMode };
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); main.current.focus(); }}>Skip to content</a>
    <header class="top">
      <a class="brand" href=${href('/')}>flowsnap</a>
      <nav aria-label="Main"><a href=${href('/')} aria-current=${r.view === 'list' ? 'page' : undefined}>Runs</a> <a href="/explorer">Explorer</a></nav>
      <div class="live">
        <span id="position" title=${position ? `source ${position.source}` : ''}>${position ? html`revision <strong>${position.revision}</strong>` : '…'}</span>
        <span id="live-state" class=${paused ? 'paused' : 'on'}>${paused ? 'paused' : mode === 'polling' ? 'live (polling)' : 'live'}</span>
        <button type="button" id="pause" aria-pressed=${paused} onClick=${() => setPaused(!paused)}>${paused ? 'Resume' : 'Pause'}</button>
      </div>
    </header>
    <main id="main" tabindex="-1" ref=${main}>
      ${r.view === 'run' ? html`<${RunView} key=${r.id} id=${r.id} ...${props} />` : html`<${ListView} ...${props} />`}
    </main>
    <footer class="muted">API <code>${endpoint}</code>${position ? html` · source <code>${position.source}</code>` : ''}</footer>`;
}

render(html`<${App} />`, document.getElementById('app'));
