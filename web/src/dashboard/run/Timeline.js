// The run's timeline: one lane per step on a shared time axis, drawn as
// SVG. A lane's bars are its attempts (coloured by outcome), sleeps and
// waits; dashed lines are backoff gaps between attempts and the time a step
// queued. Bars are one tab stop: arrow keys move between them, and the one
// focused or hovered is described below the axis.
import { html } from 'htm/preact';
import { useRef, useState } from 'preact/hooks';
import { lanes, ticks } from './timeline-model.js';
import { span, lower, fmtTime } from '../format.js';
import { Badge } from '../ui.js';

const LEGEND = [['succeeded', 'succeeded'], ['failed', 'failed'], ['started', 'in flight'], ['backoff', 'backoff or queued'], ['sleep', 'sleep'], ['wait', 'wait'], ['overdue', 'overdue wait']];

const pct = (x) => `${(x * 100).toFixed(3)}%`;

function Lane({ lane, x, focusIdx, base, onPick, now, finished }) {
  const bars = lane.segs;
  return html`<svg class="lane" width="100%" height="22" aria-hidden=${bars.length ? undefined : 'true'}>
    ${bars.map((g, i) => g.kind === 'backoff' || g.kind === 'queued'
      ? html`<line class=${'gap gap-' + g.kind} x1=${pct(x(g.from))} x2=${pct(x(g.to))} y1="11" y2="11"><title>${g.text}</title></line>`
      : html`<rect class=${`bar bar-${g.kind} ${g.state ? 'bar-' + g.state : ''} ${g.overdue ? 'bar-overdue' : ''}`}
          data-kind=${g.kind} data-from=${g.from} data-to=${g.to} data-step=${lane.step.id}
          x=${pct(x(g.from))} width=${pct(x(g.to) - x(g.from))} y="3" height="16" rx="2"
          tabindex=${base + i === focusIdx ? 0 : -1} role="img" aria-label=${`${lane.step.id}: ${g.text}`}
          data-i=${base + i} onFocus=${() => onPick(base + i)} onMouseEnter=${() => onPick(base + i)} />`)}
    ${lane.marks.filter((m) => x(m.at) >= 0 && x(m.at) <= 1).map((m) => html`<line class=${'mark mark-' + m.kind} x1=${pct(x(m.at))} x2=${pct(x(m.at))} y1="0" y2="22"><title>${m.text}</title></line>`)}
    ${!finished ? html`<line class="now" x1=${pct(x(now))} x2=${pct(x(now))} y1="0" y2="22" />` : ''}
  </svg>`;
}

export function Timeline({ run, now }) {
  const { t0, t1, lanes: ls, longest } = lanes(run, now);
  const [focus, setFocus] = useState(0);
  const [picked, setPicked] = useState(null);
  const box = useRef();
  if (!ls.length) return html`<p class="muted">No steps.</p>`;
  const x = (t) => (t - t0) / (t1 - t0);
  const flat = [];
  const bases = ls.map((l) => {
    const b = flat.length;
    l.segs.forEach((g) => flat.push(g.kind === 'backoff' || g.kind === 'queued' ? null : { lane: l, g }));
    return b;
  });
  const bars = flat.map((f, i) => (f ? i : -1)).filter((i) => i >= 0);
  const focusIdx = bars.includes(focus) ? focus : bars[0];
  const move = (e) => {
    const k = bars.indexOf(focusIdx);
    const to = { ArrowRight: k + 1, ArrowDown: k + 1, ArrowLeft: k - 1, ArrowUp: k - 1, Home: 0, End: bars.length - 1 }[e.key];
    if (to === undefined || to < 0 || to >= bars.length) return;
    e.preventDefault();
    setFocus(bars[to]);
    box.current.querySelector(`[data-i="${bars[to]}"]`)?.focus();
  };
  const pick = (i) => { setFocus(i); setPicked(i); };
  const shown = picked !== null && flat[picked] ? flat[picked] : null;
  const finished = !!run.finishedAt;
  const total = t1 - t0;
  return html`<div class="timeline" id="timeline" ref=${box} onKeyDown=${move}>
    <p class="tl-caption">${span(total)} from ${fmtTime(new Date(t0).toISOString())}${finished ? '' : ' to now'}${longest ? html` · longest step <code>${longest.step.id}</code>: <strong>${span(longest.took)}</strong> (${Math.round((longest.took / total) * 100)}%)` : ''}</p>
    <div class="tl-grid">
      <div class="tl-label tl-axis-label" aria-hidden="true"></div>
      <div class="tl-axis" aria-hidden="true">${ticks(t0, t1).map((d) => html`<span class=${d / total > 0.85 ? 'end' : undefined} style=${{ left: pct(d / total) }}>${d === 0 ? '0' : '+' + span(d)}</span>`)}</div>
      ${ls.map((l, i) => html`
        <div class=${'tl-label' + (l.current ? ' current' : '') + (l.step.parentStepId ? ' nested' : '')}>
          <code>${l.step.id}</code> <span class="muted">${lower(l.step.type)}</span> <span class=${'state state-' + l.step.state.toLowerCase()}>${lower(l.step.state)}</span>${' '}
          ${l.current ? html`<${Badge} kind="current">current<//>` : ''}${' '}${l.overdue ? html`<${Badge} kind="overdue">overdue<//>` : ''}
        </div>
        <div class=${'tl-lane' + (l.current ? ' current' : '')}><${Lane} lane=${l} x=${x} focusIdx=${focusIdx} base=${bases[i]} onPick=${pick} now=${now} finished=${finished} /></div>`)}
    </div>
    <p class="tl-detail" id="timeline-detail">${shown ? html`<code>${shown.lane.step.id}</code>: ${shown.g.text}` : html`<span class="muted">Hover over or focus a bar for its details (arrow keys move between bars).</span>`}</p>
    <p class="tl-legend muted" aria-hidden="true">${LEGEND.map(([k, label]) => html`<span><span class=${'key key-' + k}></span>${label}</span>`)}</p>
  </div>`;
}
