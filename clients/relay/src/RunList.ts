// The run list as a Relay pagination fragment on Query: listRuns with its
// filter and order as the connection's filters.
import { graphql } from 'relay-runtime';

export const listQuery = graphql`
  query RunListQuery($filter: RunFilter) {
    ...RunList_query @arguments(filter: $filter)
  }
`;

export const list = graphql`
  fragment RunList_query on Query
  @refetchable(queryName: "RunListPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 25 }
    cursor: { type: "String" }
    filter: { type: "RunFilter" }
    order: { type: "RunOrder", defaultValue: NEWEST_FIRST }
  ) {
    listRuns(filter: $filter, order: $order, first: $count, after: $cursor)
      @connection(key: "RunList_listRuns", filters: ["filter", "order"]) {
      edges {
        node {
          __typename
          ... on Run {
            id
            status
            flowName
          }
        }
      }
    }
  }
`;
