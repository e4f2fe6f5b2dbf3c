// Small pieces every view uses.
import { html } from 'htm/preact';
import { Component } from 'preact';
import { runHref } from './route.js';
import { lower } from './format.js';

export const Status = ({ s }) => html`<span class=${'status status-' + s.toLowerCase()}>${lower(s)}</span>`;

export const Badge = ({ kind = 'note', children, id }) => html`<span class=${'badge badge-' + kind} id=${id}>${children}</span>`;

export function RunLink({ node, tabIndex }) {
  if (!node) return html`<span class="muted">(unreadable)</span>`;
  if (node.__typename === 'MissingRun') return html`<span class="muted"><code>${node.id}</code> ${node.deleted ? `deleted at revision ${node.deletedAtRevision}` : 'missing'}</span>`;
  return html`<a href=${runHref(node.id)} tabindex=${tabIndex}><code>${node.id}</code></a>`;
}

export function Errors({ st }) {
  const msgs = [...(st.failure ? [st.failure] : []), ...(st.errors ?? []).map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}${e.path ? ' (at ' + e.path.join('.') + ')' : ''}`)];
  if (!msgs.length) return null;
  return html`<div role="alert" class="errors">${msgs.map((m) => html`<p>${m}</p>`)}</div>`;
}

export function Field({ label, children }) {
  return html`<div class="field"><dt>${label}</dt><dd>${children}</dd></div>`;
}

// countText spells a RunCount: "12", or "10000+" when capped.
export const countText = (c) => (c ? `${c.count}${c.capped ? '+' : ''}` : '…');

// Frozen renders its children again only when its `k` changes, so that a
// live update never wipes a form a person is filling in.
export class Frozen extends Component {
  shouldComponentUpdate(next) {
    return next.k !== this.props.k;
  }
  render({ children }) {
    return children;
  }
}
