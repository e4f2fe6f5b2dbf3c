// The GraphQL documents the dashboard sends. Every view's main query is one
// operation, so everything it shows is from one snapshot; the counts and
// the tree's levels are read beside it, each at its own position.
export const STATUSES = ['PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETED', 'FAILED', 'CANCELLED'];
export const WAITING_KINDS = ['TIMER', 'SIGNAL', 'APPROVAL', 'QUOTA', 'HUMAN', 'OTHER'];

const brief = `
fragment Brief on Snapshot {
  __typename
  ... on Run { id status flowName createdAt finishedAt roundOrdinal parentRunId heartbeatAt
    waiting { kind reason } cancellation { requestedAt } }
  ... on MissingRun { id deleted deletedAtRevision }
}`;

export const LIST = `
query Runs($filter: RunFilter, $order: RunOrder, $first: Int, $after: String,
  $cPENDING: RunFilter, $cRUNNING: RunFilter, $cSUSPENDED: RunFilter,
  $cCOMPLETED: RunFilter, $cFAILED: RunFilter, $cCANCELLED: RunFilter) {
  position { source revision }
  total: countRuns(filter: $filter) { count capped }
  PENDING: countRuns(filter: $cPENDING) { count capped }
  RUNNING: countRuns(filter: $cRUNNING) { count capped }
  SUSPENDED: countRuns(filter: $cSUSPENDED) { count capped }
  COMPLETED: countRuns(filter: $cCOMPLETED) { count capped }
  FAILED: countRuns(filter: $cFAILED) { count capped }
  CANCELLED: countRuns(filter: $cCANCELLED) { count capped }
  listRuns(filter: $filter, order: $order, first: $first, after: $after) {
    edges { cursor node { ...Brief } }
    pageInfo { hasNextPage endCursor }
  }
}
${brief}`;

export const RUN = `
query RunPage($id: ID!, $rounds: String, $steps: String, $inbound: String, $events: String) {
  position { source revision }
  run(id: $id) {
    __typename
    ... on MissingRun { id deleted deletedAtRevision }
    ... on Run {
      id revision status flowName state createdAt startedAt finishedAt
      owner { hostId pid nonce } heartbeatAt
      claim { owner { hostId pid nonce } claimedAt }
      parentRunId
      parent { ...Brief }
      lineageId roundOrdinal
      cancellation { requestedAt acknowledgement { observedAt owner { hostId pid nonce } } }
      waiting { kind reason wakeAt tokenDigest request }
      rounds(first: 20, after: $rounds) { edges { ordinal node { ...Brief } } pageInfo { hasNextPage endCursor } }
      currentStep { id }
      steps(first: 50, after: $steps) {
        nodes {
          __typename id type state createdAt resolvedAt parentStepId
          ... on RunStep { maxAttempts attemptCount nextAttemptAt
            attempts { id number state startedAt endedAt errorName errorMessage nextAttemptAt resultType } }
          ... on SleepStep { wakeAt }
          ... on WaitStep { eventName timeoutAt claimedEvent { id } }
        }
        pageInfo { hasNextPage endCursor }
      }
      inboundEvents(first: 50, after: $inbound) {
        nodes { id eventName hasPayload payload createdAt claimedBy claimedAt }
        pageInfo { hasNextPage endCursor }
      }
      events(first: 100, after: $events) {
        nodes { seq type recordedAt cancellationReason }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}
${brief}`;

export const LIVE_POSITION = `subscription LivePosition { position { source revision } }`;
export const LIVE_RUN = `subscription LiveRun($id: ID!) { run(id: $id) { __typename ... on Run { id revision } ... on MissingRun { id deleted } } }`;
export const POSITION = `query Position { position { source revision } }`;

// statusCounts counts a filter's runs, in all and per status ($c<STATUS>).
export const statusCounts = `
query StatusCounts($filter: RunFilter, ${STATUSES.map((s) => `$c${s}: RunFilter`).join(', ')}) {
  total: countRuns(filter: $filter) { count capped }
  ${STATUSES.map((s) => `c${s}: countRuns(filter: $c${s}) { count capped }`).join('\n  ')}
}`;

// CHILDREN reads one level of a run's descendants; each child says whether
// it has children of its own.
export const CHILDREN = `
query Children($id: ID!, $first: Int) {
  run(id: $id) {
    ... on Run { id children(first: $first) {
      edges { ordinal node { ...Brief ... on Run { children(first: 1) { edges { ordinal } } } } }
      pageInfo { hasNextPage endCursor }
    } }
  }
}
${brief}`;

// FIND is the search box's look-up of a run by id.
export const FIND = `query Find($id: ID!) { run(id: $id) { __typename ... on Run { id } ... on MissingRun { id deleted deletedAtRevision } } }`;

// FLOWS reads the flow names the filter offers.
export const FLOWS = `query Flows($after: String) { flows(first: 200, after: $after) { nodes pageInfo { hasNextPage endCursor } } }`;

// OVERVIEW reads the activity of a window and the current counts by status,
// overall or for one flow, in one snapshot.
export const OVERVIEW = `
query Overview($since: DateTime!, $until: DateTime!, $flow: String, $filter: RunFilter, ${STATUSES.map((s) => `$c${s}: RunFilter`).join(', ')}) {
  position { source revision }
  runActivity(since: $since, until: $until, bucket: HOUR, flowName: $flow) { start end started finished completed failed cancelled }
  total: countRuns(filter: $filter) { count capped }
  ${STATUSES.map((s) => `c${s}: countRuns(filter: $c${s}) { count capped }`).join('\n  ')}
}`;
