// A run's descendants, one level at a time: each node shows its status and,
// when it has children of its own, a button that reads them (a page at a
// time).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { query } from '../api.js';
import { CHILDREN } from '../queries.js';
import { Status, RunLink } from '../ui.js';

const PAGE = 20;
const MAX = 200;

function Node({ edge, rev }) {
  const n = edge.node;
  const [open, setOpen] = useState(false);
  const isRun = n?.__typename === 'Run';
  const hasKids = isRun && (n.children?.edges?.length ?? 0) > 0;
  return html`<li class="tree-node">
    <div class="tree-row">
      ${hasKids ? html`<button type="button" class="twisty" aria-expanded=${open} aria-label=${(open ? 'Collapse' : 'Expand') + ' the children of ' + n.id} onClick=${() => setOpen(!open)}>${open ? '▾' : '▸'}</button>` : html`<span class="twisty-space" aria-hidden="true"></span>`}
      <${RunLink} node=${n} /> ${isRun ? html`<${Status} s=${n.status} /> <span class="muted">${n.flowName}</span>` : ''}
    </div>
    ${open ? html`<${Level} id=${n.id} rev=${rev} />` : ''}
  </li>`;
}

// Level lists the children of run id; the tree's root level is the page's
// run itself.
export function Level({ id, rev, root }) {
  const [first, setFirst] = useState(PAGE);
  const [st, setSt] = useState(null);
  useEffect(() => {
    let live = true;
    query(CHILDREN, { id, first }).then((r) => live && setSt(r)).catch((e) => live && setSt({ errors: [{ message: e.message }] }));
    return () => { live = false; };
  }, [id, first, rev]);
  if (!st) return html`<p class="muted" aria-busy="true">Reading children…</p>`;
  const conn = st.data?.run?.children;
  if (!conn) return html`<p class="errors" role="alert">${st.errors?.[0]?.message ?? 'The children could not be read.'}</p>`;
  if (!conn.edges.length) return null;
  return html`<div><ul class=${root ? 'tree' : 'tree-sub'} id=${root ? 'tree' : undefined}>${conn.edges.map((e) => html`<${Node} key=${e.node?.id ?? e.ordinal} edge=${e} rev=${rev} />`)}</ul>
    ${conn.pageInfo.hasNextPage ? first < MAX
      ? html`<button type="button" class="link more" onClick=${() => setFirst(Math.min(MAX, first + PAGE))}>Show ${PAGE} more children of <code>${id}</code></button>`
      : html`<p class="muted">More than ${MAX}: see them in the list filtered by this parent.</p>` : ''}</div>`;
}
