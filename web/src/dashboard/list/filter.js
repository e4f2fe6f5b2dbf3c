// The list's filter as URL parameters and as the API's RunFilter.
export const TEXT_FIELDS = ['flowName', 'parentRunId', 'executionParentId', 'lineageId', 'waitingReason'];
export const TIME_FIELDS = ['createdAfter', 'createdBefore', 'finishedAfter', 'finishedBefore'];
export const ORDERS = [['NEWEST_FIRST', 'newest first'], ['OLDEST_FIRST', 'oldest first'], ['FINISHED_NEWEST_FIRST', 'finished, latest first']];

// A datetime-local value is read as UTC, as the page shows every time.
const utc = (v) => new Date(v + (/Z$|[+-]\d\d:\d\d$/.test(v) ? '' : 'Z')).toISOString();

export function filterFrom(params, staleAfterMs) {
  const f = {};
  const list = (k) => (params.get(k) ? params.get(k).split(',').filter(Boolean) : null);
  if (list('status')) f.status = list('status');
  if (list('waitingKind')) f.waitingKind = list('waitingKind');
  for (const k of TEXT_FIELDS) if (params.get(k)) f[k] = params.get(k);
  for (const k of TIME_FIELDS) if (params.get(k)) f[k] = utc(params.get(k));
  if (params.get('rootsOnly') === '1') f.rootsOnly = true;
  if (params.get('cancelRequested') === '1') f.cancelRequested = true;
  if (params.get('stale') === '1') f.heartbeatBefore = new Date(Date.now() - staleAfterMs).toISOString();
  return f;
}
