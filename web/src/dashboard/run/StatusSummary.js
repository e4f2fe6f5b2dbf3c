// How many runs a filter selects, by status, with links to the list so
// filtered: a run's children (parentRunId) or its lineage's rounds.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { query } from '../api.js';
import { STATUSES, statusCounts } from '../queries.js';
import { listHref } from '../route.js';
import { countText } from '../ui.js';
import { lower } from '../format.js';

// StatusSummary reads again whenever rev (the view's revision) changes.
export function StatusSummary({ filter, label, id, rev, urlFilter }) {
  const [d, setD] = useState(null);
  const [err, setErr] = useState(null);
  const key = JSON.stringify(filter);
  useEffect(() => {
    let live = true;
    query(statusCounts, { filter, ...Object.fromEntries(STATUSES.map((s) => ['c' + s, { ...filter, status: [s] }])) })
      .then((r) => { if (live) { setD(r.data); setErr(r.errors.length ? r.errors[0].message : null); } })
      .catch((e) => live && setErr(e.message));
    return () => { live = false; };
  }, [key, rev]);
  if (err) return html`<p class="errors" role="alert">${err}</p>`;
  if (!d) return html`<p class="muted" aria-busy="true">Counting…</p>`;
  if (d.total.count === 0) return html`<p class="muted" id=${id}>No ${label}.</p>`;
  return html`<nav class="counts" id=${id} aria-label=${label + ' by status'}>
    <a class="count" href=${listHref(urlFilter)} data-status="ALL">all <strong>${countText(d.total)}</strong></a>
    ${STATUSES.filter((s) => d['c' + s].count > 0).map((s) => html`<a class=${'count status-' + s.toLowerCase()} href=${listHref({ ...urlFilter, status: s })} data-status=${s}>${lower(s)} <strong>${countText(d['c' + s])}</strong></a>`)}
  </nav>`;
}
