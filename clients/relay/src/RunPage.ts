// Client documents relay-compiler must accept: @connection on every
// connection flowsnap serves, each in a fragment that is @refetchable (a Run
// through node(id:), the list through Query), as usePaginationFragment needs.
// A Run fragment spread where a Snapshot or a Node is selected carries
// @alias: the spread's type may not match, so it is a nullable property.
import { graphql } from 'relay-runtime';

export const runPageQuery = graphql`
  query RunPageQuery($id: ID!) {
    run(id: $id) {
      __typename
      ...RunPage_run @alias
      ...RunPageChildren_run @alias
      ...RunPageRounds_run @alias
      ...RunPageSteps_run @alias
      ...RunPageInboundEvents_run @alias
      ...RunPageEvents_run @alias
      ... on MissingRun {
        id
        deleted
      }
    }
  }
`;

export const nodeQuery = graphql`
  query RunPageNodeQuery($id: ID!) {
    node(id: $id) {
      id
      ...RunPage_run @alias
    }
  }
`;

export const run = graphql`
  fragment RunPage_run on Run @refetchable(queryName: "RunPageRefetchQuery") {
    id
    status
    flowName
    createdAt
    revision
    parent {
      __typename
      ... on Node {
        id
      }
    }
  }
`;

export const children = graphql`
  fragment RunPageChildren_run on Run
  @refetchable(queryName: "RunPageChildrenPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 10 }, cursor: { type: "String" }) {
    children(first: $count, after: $cursor) @connection(key: "RunPageChildren_children") {
      edges {
        ordinal
        node {
          __typename
          ... on Run {
            id
            status
          }
          ... on MissingRun {
            id
            deleted
          }
        }
      }
    }
  }
`;

export const rounds = graphql`
  fragment RunPageRounds_run on Run
  @refetchable(queryName: "RunPageRoundsPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 10 }, cursor: { type: "String" }) {
    rounds(first: $count, after: $cursor) @connection(key: "RunPageRounds_rounds") {
      edges {
        node {
          __typename
          ... on Run {
            id
            roundOrdinal
          }
        }
      }
    }
  }
`;

export const steps = graphql`
  fragment RunPageSteps_run on Run
  @refetchable(queryName: "RunPageStepsPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 20 }, cursor: { type: "String" }) {
    steps(first: $count, after: $cursor) @connection(key: "RunPageSteps_steps") {
      edges {
        node {
          __typename
          id
          state
          ... on WaitStep {
            eventName
          }
        }
      }
    }
  }
`;

export const inboundEvents = graphql`
  fragment RunPageInboundEvents_run on Run
  @refetchable(queryName: "RunPageInboundEventsPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 20 }, cursor: { type: "String" }) {
    inboundEvents(first: $count, after: $cursor) @connection(key: "RunPageInboundEvents_inboundEvents") {
      edges {
        node {
          id
          eventName
          claimedBy
        }
      }
    }
  }
`;

export const events = graphql`
  fragment RunPageEvents_run on Run
  @refetchable(queryName: "RunPageEventsPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 20 }, cursor: { type: "String" }) {
    events(first: $count, after: $cursor) @connection(key: "RunPageEvents_events") {
      edges {
        node {
          seq
          type
          recordedAt
        }
      }
    }
  }
`;
