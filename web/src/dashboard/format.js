// Formatting shared by the views: instants, ages and durations, with Intl's
// number and date formatters.
const num = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
const dec = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });
const stamp = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'UTC', year: 'numeric', month: '2-digit', day: '2-digit',
  hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
});
const clock = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const day = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', weekday: 'short', day: 'numeric' });

// fmtTime spells an instant as "2026-12-03 15:04:05 UTC".
export function fmtTime(t) {
  if (!t) return '—';
  const p = Object.fromEntries(stamp.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} UTC`;
}

// fmtClock spells an instant's UTC hour and minute, for chart axes; with
// withDay the day goes first.
export const fmtClock = (t, withDay) => (withDay ? `${day.format(new Date(t))} ` : '') + clock.format(new Date(t));

const UNITS = [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1000]];

// span spells a length of time in its two largest units: "36 d 17 h",
// "2 min 27 s", "4.2 s", "830 ms".
export function span(ms) {
  ms = Math.max(0, Math.round(ms));
  if (ms < 1000) return `${num.format(ms)} ms`;
  if (ms < 10_000) return `${dec.format(Math.floor(ms / 100) / 10)} s`;
  for (let i = 0; i < UNITS.length; i++) {
    const [name, size] = UNITS[i];
    if (ms < size) continue;
    const whole = Math.floor(ms / size);
    const next = UNITS[i + 1];
    const rest = next ? Math.floor((ms - whole * size) / next[1]) : 0;
    return rest ? `${num.format(whole)} ${name} ${num.format(rest)} ${next[0]}` : `${num.format(whole)} ${name}`;
  }
  return `${num.format(ms)} ms`;
}

// age says how long ago (or in how long) t is from now.
export function age(t, now) {
  if (!t) return '';
  const ms = now - Date.parse(t);
  return ms >= 0 ? `${span(ms)} ago` : `in ${span(-ms)}`;
}

// duration is the time from a to b, or to now while b is unset.
export function duration(a, b, now) {
  if (!a) return '—';
  return span((b ? Date.parse(b) : now) - Date.parse(a));
}

export const count = (n) => num.format(n);
export const ownerText = (o) => (o ? `${o.hostId} pid ${o.pid} (${o.nonce})` : '—');
export const lower = (s) => s.toLowerCase().replace('_', ' ');
