/**
 * Metric queries (spec 4.7) over request events and resource snapshots: each query of a body becomes one aggregation in
 * the app-metrics database, narrowed in SQL to the namespaces where the caller may
 * `app-metrics:query` (and the body's `namespace` and `labelSelector`), in steps of `range.step`
 * from `range.start`. Every series has a point per step for counts (0 when nothing happened) and
 * only for steps with events for averages and p95 (no value is not a value of 0). Without a
 * `labelSelector`, over whole minutes, the repository reads per-minute rollups; p95 is exact
 * (`percentile_cont(0.95)` over the raw rows) unless it comes from their histograms (ranges of
 * more than 50,000 events; within 33.4%, docs/metrics.md). An error (`request_events.errors`) is an event
 * without an answer (the upstream unreachable or timed out) or with a status of 500 or more.
 */
import { type AccessFilter, accessFilter } from "@svc/domain/AccessFilter"
import { BadRequest } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import {
  type MetricsPlan,
  type MetricsQueryBody,
  type MetricsQueryResult,
  type MetricsSchema,
  metricsSchema,
  type PlannedQuery,
  planMetricsQuery
} from "@svc/domain/Metrics"
import { type GroupableColumn, RequestEventRepo } from "@svc/sql/RequestEventRepo"
import { ResourceSnapshotRepo, type SnapshotKind } from "@svc/sql/ResourceSnapshotRepo"
import { Context, Effect, Layer } from "effect"

const resource = "app-metrics"

/** One series being built: its groupBy labels and its values by position (step or snapshot time). */
interface Group {
  readonly labels: Record<string, string>
  readonly values: Map<number, number>
}

/**
 * The cells of one query by combination of groupBy values, each value at `positionOf(cell)`
 * (skipped when undefined). A missing value (no status code, no connector) is the empty string,
 * as in rate-limit buckets. Without groupBy a count still has its one series, zeros included.
 */
const groupCells = <C extends { readonly groups: ReadonlyArray<string | null>; readonly value: number }>(
  query: PlannedQuery,
  cells: ReadonlyArray<C>,
  positionOf: (cell: C) => number | undefined
): ReadonlyArray<Group> => {
  const byGroup = new Map<string, Group>()
  for (const cell of cells) {
    const position = positionOf(cell)
    if (position === undefined) continue
    const key = JSON.stringify(cell.groups)
    let group = byGroup.get(key)
    if (group === undefined) {
      const labels: Record<string, string> = {}
      query.groupBy.forEach((name, i) => {
        labels[name] = cell.groups[i] ?? ""
      })
      group = { labels, values: new Map() }
      byGroup.set(key, group)
    }
    group.values.set(position, cell.value)
  }
  if (byGroup.size === 0 && query.aggregation === "count" && query.groupBy.length === 0) {
    byGroup.set("[]", { labels: {}, values: new Map() })
  }
  return [...byGroup.values()]
}

/** The series of one request-event query from its cells (a count has a point per step, 0 when empty). */
const seriesOf = (
  plan: MetricsPlan,
  query: PlannedQuery,
  cells: ReadonlyArray<{ readonly step: number; readonly groups: ReadonlyArray<string | null>; readonly value: number }>
): MetricsQueryResult["series"] => {
  const counting = query.aggregation === "count"
  const inRange = (cell: { readonly step: number }) =>
    cell.step < 0 || cell.step >= plan.steps ? undefined : cell.step
  return groupCells(query, cells, inRange).map((group) => {
    const points: Array<{ timestamp: string; value: number }> = []
    for (let step = 0; step < plan.steps; step++) {
      const value = group.values.get(step)
      if (value === undefined && !counting) continue
      points.push({ timestamp: new Date(plan.startMs + step * plan.stepMs).toISOString(), value: value ?? 0 })
    }
    return { refId: query.refId, metric: query.metric, aggregation: query.aggregation, labels: group.labels, points }
  })
}

export class Metrics extends Context.Service<
  Metrics,
  {
    /** `POST /api/v1/metrics/query`: 400 naming each invalid field. */
    readonly query: (actor: AuthenticatedActor, body: MetricsQueryBody) => Effect.Effect<MetricsQueryResult, BadRequest>
    /** `GET /api/v1/metrics/schema`. */
    readonly schema: MetricsSchema
  }
>()("@svc/server/Metrics") {
  static readonly layerNoDeps: Layer.Layer<Metrics, never, RequestEventRepo | ResourceSnapshotRepo> = Layer.effect(
    Metrics,
    Effect.gen(function* () {
      const repo = yield* RequestEventRepo
      const snapshots = yield* ResourceSnapshotRepo

      const query = Effect.fn("Metrics.query")(function* (actor: AuthenticatedActor, body: MetricsQueryBody) {
        const plan = planMetricsQuery(body)
        if (!("steps" in plan)) {
          return yield* new BadRequest({ error: "invalid metrics query", code: "invalid_request", details: plan })
        }
        const access = accessFilter(actor, resource, "query")
        const series = yield* Effect.forEach(
          plan.queries,
          (planned) =>
            planned.metric.startsWith("resources.")
              ? resourceSeries(plan, planned, access)
              : Effect.map(
                  Effect.orDie(
                    repo.aggregate({
                      access,
                      namespace: plan.namespace,
                      selector: plan.selector,
                      start: new Date(plan.startMs),
                      end: new Date(plan.endMs),
                      startMs: plan.startMs,
                      stepMs: plan.stepMs,
                      groupBy: planned.groupBy as ReadonlyArray<GroupableColumn>,
                      aggregation: planned.aggregation as "count" | "avg" | "p95",
                      errorsOnly: planned.metric === "request_events.errors"
                    })
                  ),
                  (cells) => seriesOf(plan, planned, cells)
                ),
          { concurrency: 4 }
        )
        return { series: series.flat() }
      })

      /**
       * A `resources.*` series: each step reads the latest snapshot taken at or before its end
       * (a step before the first snapshot has no point); a group absent from that snapshot is 0.
       */
      const resourceSeries = (plan: MetricsPlan, planned: PlannedQuery, access: AccessFilter) =>
        Effect.gen(function* () {
          const kind = planned.metric.slice("resources.".length) as SnapshotKind
          const times = yield* Effect.orDie(snapshots.times(kind, new Date(plan.startMs), new Date(plan.endMs - 1)))
          const chosen: Array<Date | undefined> = []
          let next = 0
          let current: Date | undefined
          for (let step = 0; step < plan.steps; step++) {
            const bound = Math.min(plan.startMs + (step + 1) * plan.stepMs, plan.endMs) - 1
            while (next < times.length && times[next]!.getTime() <= bound) current = times[next++]
            chosen.push(current)
          }
          const used = [...new Set(chosen.filter((t): t is Date => t !== undefined).map((t) => t.getTime()))]
          const cells = yield* Effect.orDie(
            snapshots.aggregate({
              kind,
              takenAt: used.map((ms) => new Date(ms)),
              access,
              namespace: plan.namespace,
              selector: plan.selector,
              groupBy: planned.groupBy
            })
          )
          const groups = groupCells(planned, cells, (cell) => cell.takenAt.getTime())
          return groups.map((group) => ({
            refId: planned.refId,
            metric: planned.metric,
            aggregation: planned.aggregation,
            labels: group.labels,
            points: chosen.flatMap((takenAt, step) =>
              takenAt === undefined
                ? []
                : [
                    {
                      timestamp: new Date(plan.startMs + step * plan.stepMs).toISOString(),
                      value: group.values.get(takenAt.getTime()) ?? 0
                    }
                  ]
            )
          }))
        })

      return Metrics.of({ query, schema: metricsSchema })
    })
  )
}
