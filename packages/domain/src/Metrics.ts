/**
 * Application metrics (spec 4.7): `POST /api/v1/metrics/query` and `GET /api/v1/metrics/schema`.
 * The metrics, their aggregations and groupBy keys are exactly spec 4.7's; a query is validated
 * in full here (every problem named by its field) before any SQL runs. Pure.
 */
import { Result, Schema } from "effect"
import { parseDuration } from "./Duration.ts"
import { parseIsoTimestamp } from "./RetryAfter.ts"
import { parseNamespaceFilter } from "./Resource.ts"
import { formatSelectorProblem, parseSelector, type Selector } from "./Selector.ts"
import type { NamespaceFilter } from "./Resource.ts"

/** What each metric offers (spec 4.7). */
export const metricCatalog = {
  request_events: {
    aggregations: ["count"],
    groupBy: ["type", "method", "response_status_code", "response_source", "connector_id"]
  },
  "request_events.errors": {
    aggregations: ["count"],
    groupBy: ["type", "method", "response_status_code", "response_source", "connector_id"]
  },
  "request_events.duration_ms": {
    aggregations: ["avg", "p95"],
    groupBy: ["type", "method", "response_status_code", "response_source", "connector_id"]
  },
  "resources.connections": {
    aggregations: ["count"],
    groupBy: ["state", "health_state", "connector_id", "connector_version"]
  },
  "resources.actors": { aggregations: ["count"], groupBy: ["namespace"] },
  "resources.connectors": { aggregations: ["count"], groupBy: ["state", "connector_version", "namespace"] },
  "resources.connector_versions": {
    aggregations: ["count"],
    groupBy: ["state", "connector_id", "connector_version", "namespace"]
  },
  "resources.namespaces": { aggregations: ["count"], groupBy: ["state", "namespace"] },
  "resources.rate_limits": { aggregations: ["count"], groupBy: ["mode", "namespace"] }
} as const satisfies Record<
  string,
  { readonly aggregations: ReadonlyArray<string>; readonly groupBy: ReadonlyArray<string> }
>

export type MetricName = keyof typeof metricCatalog

/** The metrics answered from stored request events; the `resources.*` ones come from resource snapshots. */
export const requestEventMetrics: ReadonlyArray<MetricName> = [
  "request_events",
  "request_events.errors",
  "request_events.duration_ms"
]

/** Most points one series may have: `(end − start) / step`, rounded up. */
export const maxPointsPerSeries = 10_000

/** Most queries in one request. */
export const maxQueries = 20

/** One query of the body. */
export const MetricQuery = Schema.Struct({
  refId: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)),
  metric: Schema.String,
  aggregation: Schema.String,
  groupBy: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({ identifier: "MetricQuery" })

/** `POST /api/v1/metrics/query` body (spec 4.7). */
export const MetricsQueryBody = Schema.Struct({
  range: Schema.Struct({ start: Schema.String, end: Schema.String, step: Schema.String }).annotate({
    identifier: "MetricsRange"
  }),
  namespace: Schema.optionalKey(Schema.String),
  labelSelector: Schema.optionalKey(Schema.String),
  queries: Schema.Array(MetricQuery)
}).annotate({ identifier: "MetricsQueryBody" })
export type MetricsQueryBody = typeof MetricsQueryBody.Type

/** One point: the start of its step and the value (absent steps have no point for averages). */
export const MetricPoint = Schema.Struct({ timestamp: Schema.String, value: Schema.Number }).annotate({
  identifier: "MetricPoint"
})

/** One series: a query's values for one combination of groupBy values. */
export const MetricSeries = Schema.Struct({
  refId: Schema.String,
  metric: Schema.String,
  aggregation: Schema.String,
  labels: Schema.Record(Schema.String, Schema.String),
  points: Schema.Array(MetricPoint)
}).annotate({ identifier: "MetricSeries" })

/** `POST /api/v1/metrics/query` answer. */
export const MetricsQueryResult = Schema.Struct({ series: Schema.Array(MetricSeries) }).annotate({
  identifier: "MetricsQueryResult"
})
export type MetricsQueryResult = typeof MetricsQueryResult.Type

/** `GET /api/v1/metrics/schema`: what dashboards may ask for. */
export const MetricsSchema = Schema.Struct({
  metrics: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      aggregations: Schema.Array(Schema.String),
      groupBy: Schema.Array(Schema.String),
      /** Where the metric comes from: stored request events, or periodic resource snapshots. */
      source: Schema.Literals(["request_events", "resource_snapshots"])
    }).annotate({ identifier: "MetricDescriptor" })
  ),
  maxPointsPerSeries: Schema.Number,
  maxQueries: Schema.Number
}).annotate({ identifier: "MetricsSchema" })
export type MetricsSchema = typeof MetricsSchema.Type

/** The schema answer. */
export const metricsSchema: MetricsSchema = {
  metrics: Object.entries(metricCatalog).map(([name, entry]) => ({
    name,
    aggregations: entry.aggregations,
    groupBy: entry.groupBy,
    source: requestEventMetrics.includes(name as MetricName) ? "request_events" : "resource_snapshots"
  })),
  maxPointsPerSeries,
  maxQueries
}

/** A validated query. */
export interface PlannedQuery {
  readonly refId: string
  readonly metric: MetricName
  readonly aggregation: string
  readonly groupBy: ReadonlyArray<string>
}

/** A validated body: epoch milliseconds, the parsed filters and queries. */
export interface MetricsPlan {
  readonly startMs: number
  readonly endMs: number
  readonly stepMs: number
  readonly steps: number
  readonly namespace: NamespaceFilter | undefined
  readonly selector: Selector | undefined
  readonly queries: ReadonlyArray<PlannedQuery>
}

/** A problem with the body, at its field (`body.range.step`, `body.queries[0].metric`). */
export interface MetricsProblem {
  readonly field: string
  readonly message: string
}

/** Validates a body; every problem is named. */
export const planMetricsQuery = (body: MetricsQueryBody): MetricsPlan | ReadonlyArray<MetricsProblem> => {
  const problems: Array<MetricsProblem> = []
  const startMs = parseIsoTimestamp(body.range.start)
  const endMs = parseIsoTimestamp(body.range.end)
  const stepMs = parseDuration(body.range.step)
  if (startMs === undefined) problems.push({ field: "body.range.start", message: "must be an ISO 8601 timestamp" })
  if (endMs === undefined) problems.push({ field: "body.range.end", message: "must be an ISO 8601 timestamp" })
  if (stepMs === undefined || stepMs < 1_000) {
    problems.push({ field: "body.range.step", message: "must be a duration of at least 1s (e.g. 15m)" })
  }
  let steps = 0
  if (startMs !== undefined && endMs !== undefined) {
    if (endMs <= startMs) problems.push({ field: "body.range.end", message: "must be after range.start" })
    else if (stepMs !== undefined && stepMs >= 1_000) {
      steps = Math.ceil((endMs - startMs) / stepMs)
      if (steps > maxPointsPerSeries) {
        problems.push({
          field: "body.range.step",
          message: `the range holds ${steps} steps of this size; at most ${maxPointsPerSeries} are allowed`
        })
      }
    }
  }
  const namespace = body.namespace === undefined ? undefined : parseNamespaceFilter(body.namespace)
  if (body.namespace !== undefined && namespace === undefined) {
    problems.push({
      field: "body.namespace",
      message: "must be a namespace path (root.acme) or a subtree (root.acme.**)"
    })
  }
  const parsedSelector = body.labelSelector === undefined ? undefined : parseSelector(body.labelSelector)
  if (parsedSelector !== undefined && Result.isFailure(parsedSelector)) {
    for (const problem of parsedSelector.failure) {
      problems.push({ field: "body.labelSelector", message: formatSelectorProblem(problem) })
    }
  }
  if (body.queries.length === 0) problems.push({ field: "body.queries", message: "must hold at least one query" })
  if (body.queries.length > maxQueries) {
    problems.push({ field: "body.queries", message: `must hold at most ${maxQueries} queries` })
  }
  const queries: Array<PlannedQuery> = []
  const refIds = new Set<string>()
  body.queries.forEach((query, i) => {
    const at = `body.queries[${i}]`
    if (refIds.has(query.refId)) problems.push({ field: `${at}.refId`, message: "must be unique in the request" })
    refIds.add(query.refId)
    if (!Object.hasOwn(metricCatalog, query.metric)) {
      problems.push({
        field: `${at}.metric`,
        message: `unknown metric; one of ${Object.keys(metricCatalog).join(", ")}`
      })
      return
    }
    const metric = query.metric as MetricName
    const entry = metricCatalog[metric]
    if (!(entry.aggregations as ReadonlyArray<string>).includes(query.aggregation)) {
      problems.push({
        field: `${at}.aggregation`,
        message: `${metric} allows ${entry.aggregations.join(", ")}`
      })
    }
    const groupBy = query.groupBy ?? []
    groupBy.forEach((key, k) => {
      if (!(entry.groupBy as ReadonlyArray<string>).includes(key)) {
        problems.push({ field: `${at}.groupBy[${k}]`, message: `${metric} groups by ${entry.groupBy.join(", ")}` })
      }
    })
    if (new Set(groupBy).size !== groupBy.length) {
      problems.push({ field: `${at}.groupBy`, message: "must not repeat a key" })
    }
    queries.push({ refId: query.refId, metric, aggregation: query.aggregation, groupBy })
  })
  if (problems.length > 0 || startMs === undefined || endMs === undefined || stepMs === undefined) return problems
  return {
    startMs,
    endMs,
    stepMs,
    steps,
    namespace,
    selector: parsedSelector !== undefined && Result.isSuccess(parsedSelector) ? parsedSelector.success : undefined,
    queries
  }
}
