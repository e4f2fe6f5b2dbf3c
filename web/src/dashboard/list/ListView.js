// The runs list: counts by status, the filters, a page of runs (one tab
// stop per row: the run's link) and the pager.
import { html } from 'htm/preact';
import { useEffect } from 'preact/hooks';
import { query } from '../api.js';
import { STATUSES, LIST } from '../queries.js';
import { useLive, useNow } from '../live.js';
import { useConfig } from '../config.js';
import { href, runHref } from '../route.js';
import { age, fmtTime, lower } from '../format.js';
import { Status, Badge, RunLink, Errors, countText } from '../ui.js';
import { Filters } from './Filters.js';
import { filterFrom } from './filter.js';

const PAGE = 25;

function Row({ node, now, staleAfterMs, finishedOrder }) {
  if (!node || node.__typename !== 'Run') return html`<tr><td colspan="6"><${RunLink} node=${node} /></td></tr>`;
  const stale = node.status === 'RUNNING' && node.heartbeatAt && now - Date.parse(node.heartbeatAt) > staleAfterMs;
  const t = finishedOrder ? node.finishedAt : node.createdAt;
  return html`<tr>
    <td><a href=${runHref(node.id)} class="run-link"><code>${node.id}</code></a></td>
    <td><${Status} s=${node.status} />${stale ? html` <${Badge} kind="stale">stale<//>` : ''}${node.cancellation?.requestedAt && !node.finishedAt ? html` <${Badge}>cancel requested<//>` : ''}</td>
    <td>${node.flowName}</td>
    <td><time datetime=${t} title=${fmtTime(t)}>${age(t, now)}</time></td>
    <td>${node.waiting ? `${lower(node.waiting.kind)}: ${node.waiting.reason}` : ''}</td>
    <td>${node.parentRunId ? html`<code>${node.parentRunId}</code>` : ''}</td>
  </tr>`;
}

export function ListView({ r, paused, setPosition, setMode }) {
  const { params } = r;
  const now = useNow();
  const { staleAfterMs } = useConfig();
  const [st, mode] = useLive(async () => {
    const filter = filterFrom(params, staleAfterMs);
    const vars = { filter, first: PAGE, after: params.get('after') || null, order: params.get('order') || 'NEWEST_FIRST' };
    for (const s of STATUSES) vars['c' + s] = { ...filter, status: filter.status ? filter.status.filter((x) => x === s) : [s] };
    const res = await query(LIST, vars);
    setPosition(res.position);
    return res;
  }, paused, params.toString() + '|' + staleAfterMs);
  useEffect(() => setMode(mode), [mode]);
  useEffect(() => { document.title = 'Runs · flowsnap'; }, []);
  const d = st.data;
  const conn = d?.listRuns;
  const edges = conn?.edges ?? [];
  const here = Object.fromEntries(params);
  const finishedOrder = params.get('order') === 'FINISHED_NEWEST_FIRST';
  return html`<section aria-labelledby="list-title">
    <h1 id="list-title">Runs</h1>
    <nav class="counts" aria-label="Counts by status">
      <a href=${href('/', { ...here, status: '', after: '' })} class="count">all <strong>${countText(d?.total)}</strong></a>
      ${STATUSES.map((s) => html`<a href=${href('/', { ...here, status: s, after: '' })} class=${'count status-' + s.toLowerCase()} data-status=${s}>${lower(s)} <strong>${countText(d?.[s])}</strong></a>`)}
    </nav>
    <details open=${[...params.keys()].some((k) => k !== 'after')}><summary>Filters</summary><${Filters} params=${params} staleAfterMs=${staleAfterMs} /></details>
    <${Errors} st=${st} />
    <div class="table-wrap" id="results"><table class="runs">
      <caption class="sr-only">Runs, ${finishedOrder ? 'latest finished' : params.get('order') === 'OLDEST_FIRST' ? 'oldest' : 'newest'} first</caption>
      <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Flow</th><th scope="col">${finishedOrder ? 'Finished' : 'Created'}</th><th scope="col">Waiting</th><th scope="col">Parent</th></tr></thead>
      <tbody>
        ${edges.map(({ node }) => html`<${Row} node=${node} now=${now} staleAfterMs=${staleAfterMs} finishedOrder=${finishedOrder} />`)}
        ${!st.loading && edges.length === 0 ? html`<tr><td colspan="6" class="muted">No runs match.</td></tr>` : ''}
      </tbody>
    </table></div>
    <nav class="pager" aria-label="Pages" id="pages">
      ${params.get('after') ? html`<a href=${href('/', { ...here, after: '' })} id="first-page">First page</a>` : ''}
      ${conn?.pageInfo?.hasNextPage ? html`<a href=${href('/', { ...here, after: conn.pageInfo.endCursor })} id="next-page" rel="next">Next page</a>` : ''}
    </nav>
  </section>`;
}
