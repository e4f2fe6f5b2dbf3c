// A bar chart of one series over time, drawn as SVG: one bar per bucket,
// the latest on the right, the tallest bar's value on the axis. The figure
// describes itself in words for screen readers, and its data is a table.
import { html } from 'htm/preact';
import { fmtClock, count } from '../format.js';

export function BarChart({ id, title, buckets, value, kind, summary, withDay }) {
  const vals = buckets.map(value);
  const max = Math.max(1, ...vals);
  const n = buckets.length;
  const W = n * 10;
  const H = 100;
  const ticks = [0, Math.floor(n / 4), Math.floor(n / 2), Math.floor((3 * n) / 4), n - 1].filter((v, i, a) => a.indexOf(v) === i);
  return html`<figure class="chart" id=${id}>
    <figcaption><strong>${title}</strong> <span class="muted">${summary}</span></figcaption>
    <div class="chart-body">
      <div class="chart-y" aria-hidden="true"><span>${count(max)}</span><span>0</span></div>
      <svg class=${'bars bars-' + kind} viewBox=${`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label=${`${title}: ${summary}`}>
        <line class="baseline" x1="0" x2=${W} y1=${H} y2=${H} />
        ${vals.map((v, i) => html`<rect class=${'bar' + (i === n - 1 ? ' latest' : '')} x=${i * 10 + 1} width="8" y=${H - (v / max) * H} height=${(v / max) * H} data-value=${v}><title>${fmtClock(buckets[i].start, withDay)}–${fmtClock(buckets[i].end)} UTC: ${count(v)}</title></rect>`)}
      </svg>
    </div>
    <div class="chart-x" aria-hidden="true">${ticks.map((i) => html`<span style=${{ left: `${((i + 0.5) / n) * 100}%` }}>${fmtClock(buckets[i].end, withDay)}</span>`)}</div>
  </figure>`;
}
