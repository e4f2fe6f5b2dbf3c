// The overview: runs started, finished and failed per hour over the last
// 24 hours (or 7 days), overall or for one flow, and the current counts by
// status; read in one query (runActivity beside countRuns) and kept live.
import { html } from 'htm/preact';
import { useEffect } from 'preact/hooks';
import { query } from '../api.js';
import { OVERVIEW, STATUSES } from '../queries.js';
import { useLive } from '../live.js';
import { href, go, listHref } from '../route.js';
import { Errors, Frozen, countText } from '../ui.js';
import { count, lower, fmtClock } from '../format.js';
import { BarChart } from './BarChart.js';
import { FlowNames } from '../flows.js';

const HOUR = 3_600_000;
const RANGES = { '24h': { hours: 24, label: 'last 24 hours' }, '7d': { hours: 168, label: 'last 7 days' } };

// trend compares the last bucket with the mean of the ones before it.
function trend(vals) {
  const last = vals[vals.length - 1] ?? 0;
  const before = vals.slice(0, -1);
  const mean = before.length ? before.reduce((a, b) => a + b, 0) / before.length : 0;
  let word = 'about the same as';
  if (last > mean * 1.5 && last - mean >= 1) word = 'up on';
  else if (last < mean / 1.5 && mean - last >= 1) word = 'down on';
  return { last, mean, word };
}

const rate = (x) => (x >= 10 ? count(Math.round(x)) : x.toFixed(1));

function FlowForm({ flow, range }) {
  const submit = (e) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    go(href('/overview', { flow: (fd.get('flow') ?? '').trim(), range: fd.get('range') === '24h' ? '' : fd.get('range') }));
  };
  return html`<form class="overview-form" onSubmit=${submit} aria-label="Choose the window and flow">
    <label>Window<select name="range" id="o-range">${Object.entries(RANGES).map(([k, v]) => html`<option value=${k} selected=${k === range}>${v.label}</option>`)}</select></label>
    <label>Flow<input name="flow" id="o-flow" value=${flow} placeholder="every flow" list="flow-names" autocomplete="off" /></label><${FlowNames} />
    <button type="submit" id="o-apply">Show</button>
  </form>`;
}

export function Overview({ r, paused, setPosition, setMode }) {
  const flow = r.params.get('flow') ?? '';
  const range = RANGES[r.params.get('range')] ? r.params.get('range') : '24h';
  const [st, mode] = useLive(async () => {
    const until = Date.now();
    const since = until - RANGES[range].hours * HOUR;
    const filter = flow ? { flowName: flow } : {};
    const vars = { since: new Date(since).toISOString(), until: new Date(until).toISOString(), flow: flow || null, filter };
    for (const s of STATUSES) vars['c' + s] = { ...filter, status: [s] };
    const res = await query(OVERVIEW, vars);
    setPosition(res.position);
    return res;
  }, paused, flow + '|' + range);
  useEffect(() => setMode(mode), [mode]);
  useEffect(() => { document.title = 'Overview · flowsnap'; }, []);
  const d = st.data;
  const buckets = d?.runActivity ?? [];
  const withDay = range === '7d';
  const f = trend(buckets.map((b) => b.failed));
  const series = [
    ['started', 'Started', (b) => b.started],
    ['finished', 'Finished', (b) => b.finished],
    ['failed', 'Failed', (b) => b.failed],
  ];
  const sum = (k) => buckets.reduce((a, b) => a + b[k], 0);
  const listFilter = flow ? { flowName: flow } : {};
  return html`<section aria-labelledby="overview-title">
    <h1 id="overview-title">Overview${flow ? html` of <code>${flow}</code>` : ''}</h1>
    <${Frozen} k=${flow + '|' + range}><${FlowForm} flow=${flow} range=${range} /><//>
    <${Errors} st=${st} />
    <h2 class="sr-only">Now</h2>
    <nav class="counts" aria-label="Current counts by status" id="overview-counts">
      <a class="count" href=${listHref(listFilter)}>all <strong>${countText(d?.total)}</strong></a>
      ${STATUSES.map((s) => html`<a class=${'count status-' + s.toLowerCase()} href=${listHref({ ...listFilter, status: s })} data-status=${s}>${lower(s)} <strong>${countText(d?.['c' + s])}</strong></a>`)}
    </nav>
    ${buckets.length ? html`
      <p class=${'headline trend-' + f.word.split(' ')[0]} id="headline">
        <strong>${count(f.last)} failed in the last hour</strong>, ${f.word} the hourly mean of ${rate(f.mean)} over the ${RANGES[range].label} before it
        · ${count(buckets[buckets.length - 1].finished)} finished, ${count(buckets[buckets.length - 1].started)} started.${' '}
        <a href=${listHref({ ...listFilter, status: 'FAILED', order: 'FINISHED_NEWEST_FIRST' })}>Latest failures</a>
      </p>
      <div class="charts">
        ${series.map(([k, title, value]) => html`<${BarChart} id=${'chart-' + k} kind=${k} title=${title + ' per hour'} buckets=${buckets} value=${value} withDay=${withDay}
          summary=${`${count(sum(k))} in the ${RANGES[range].label}; ${count(value(buckets[buckets.length - 1]))} in the last hour`} />`)}
      </div>
      <details><summary>The numbers</summary><div class="table-wrap"><table id="activity-table">
        <caption class="sr-only">Runs per hour, ${RANGES[range].label}</caption>
        <thead><tr><th scope="col">Hour ending (UTC)</th><th scope="col">Started</th><th scope="col">Completed</th><th scope="col">Failed</th><th scope="col">Cancelled</th></tr></thead>
        <tbody>${[...buckets].reverse().map((b) => html`<tr><td>${fmtClock(b.end, true)}</td><td>${b.started}</td><td>${b.completed}</td><td>${b.failed}</td><td>${b.cancelled}</td></tr>`)}</tbody>
      </table></div></details>` : st.loading ? html`<p aria-busy="true">Loading…</p>` : ''}
  </section>`;
}
