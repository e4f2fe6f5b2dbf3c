// The list's filter form: every RunFilter field, the order, and the flows
// the API knows offered as suggestions.
import { html } from 'htm/preact';
import { STATUSES, WAITING_KINDS } from '../queries.js';
import { FlowNames } from '../flows.js';
import { Frozen } from '../ui.js';
import { href, go } from '../route.js';
import { span, lower } from '../format.js';
import { TEXT_FIELDS, TIME_FIELDS, ORDERS } from './filter.js';

const LABELS = {
  flowName: ['Flow', 'e.g. batch-import'], parentRunId: ['Parent run id'], executionParentId: ['Effective parent id'],
  lineageId: ['Lineage id'], waitingReason: ['Waiting reason', 'e.g. approval'],
  createdAfter: ['Created at or after'], createdBefore: ['Created before'], finishedAfter: ['Finished at or after'], finishedBefore: ['Finished before'],
};

function FilterForm({ params, staleAfterMs }) {
  const submit = (e) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const p = {};
    for (const k of ['status', 'waitingKind']) p[k] = fd.getAll(k).join(',');
    for (const k of [...TEXT_FIELDS, ...TIME_FIELDS, 'order']) p[k] = (fd.get(k) ?? '').trim();
    for (const k of ['rootsOnly', 'cancelRequested', 'stale']) p[k] = fd.get(k) ? '1' : '';
    if (p.order === 'NEWEST_FIRST') p.order = '';
    go(href('/', p));
  };
  const has = (k, v) => (params.get(k) ?? '').split(',').includes(v);
  const text = (k) => html`<label>${LABELS[k][0]}<input name=${k} id=${'f-' + k} value=${params.get(k) ?? ''} placeholder=${LABELS[k][1] ?? ''} autocomplete="off" list=${k === 'flowName' ? 'flow-names' : undefined} /></label>`;
  const time = (k) => html`<label>${LABELS[k][0]} (UTC)<input type="datetime-local" step="1" name=${k} id=${'f-' + k} value=${params.get(k) ?? ''} /></label>`;
  return html`<form class="filters" onSubmit=${submit} aria-label="Filter runs">
    <fieldset><legend>Status</legend>
      ${STATUSES.map((s) => html`<label class="check"><input type="checkbox" name="status" value=${s} checked=${has('status', s)} /> ${lower(s)}</label>`)}
    </fieldset>
    <fieldset><legend>Waiting kind</legend>
      ${WAITING_KINDS.map((s) => html`<label class="check"><input type="checkbox" name="waitingKind" value=${s} checked=${has('waitingKind', s)} /> ${lower(s)}</label>`)}
    </fieldset>
    <div class="fields">
      ${TEXT_FIELDS.map(text)}
      <${FlowNames} />
      ${TIME_FIELDS.map(time)}
      <label>Order<select name="order" id="f-order">
        ${ORDERS.map(([v, l]) => html`<option value=${v} selected=${(params.get('order') || 'NEWEST_FIRST') === v}>${l}</option>`)}
      </select></label>
    </div>
    <div class="flags">
      <label class="check"><input type="checkbox" name="rootsOnly" checked=${params.get('rootsOnly') === '1'} /> roots only</label>
      <label class="check"><input type="checkbox" name="cancelRequested" checked=${params.get('cancelRequested') === '1'} /> cancellation requested</label>
      <label class="check"><input type="checkbox" name="stale" checked=${params.get('stale') === '1'} /> stale heartbeat (over ${span(staleAfterMs)})</label>
    </div>
    <div class="actions"><button type="submit" id="apply">Apply filters</button> <a href=${href('/')}>Clear</a></div>
  </form>`;
}

// Filters is rendered again only when the URL's filter or the threshold
// changes, so a live update never wipes what a person is typing.
export const Filters = ({ params, staleAfterMs }) => html`<${Frozen} k=${params.toString() + '|' + staleAfterMs}><${FilterForm} params=${params} staleAfterMs=${staleAfterMs} /><//>`;
