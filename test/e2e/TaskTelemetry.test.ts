/**
 * Task-queue telemetry (spec 8.3, docs/telemetry.md "Traces" and "Metrics"), exported to the
 * in-process OTLP receiver: the `task {type}` span of every handler run (task type, retry count,
 * Error status on a failed task, children hanging from it), `svc.queue.task.duration` recorded
 * once per ended task by type and result, `svc.queue.queue.size` sampled from the task table,
 * and nothing at all — no span, no metric, no task-table query — with telemetry off.
 */
import { resolveTelemetry } from "@svc/server/config/TelemetryConfig"
import { noopTelemetry, Telemetry } from "@svc/server/telemetry/Telemetry"
import * as TelemetryLayer from "@svc/server/telemetry/TelemetryLayer"
import { observeTask, queueSizeLayer } from "@svc/server/worker/TaskTelemetry"
import { TaskRepo, type TaskRow } from "@svc/sql/TaskRepo"
import { Duration, Effect, Layer, Metric, Option } from "effect"
import { describe, expect, it } from "vitest"
import { type OtlpReceiver, startHttpReceiver } from "../support/OtlpReceiver.ts"

const telemetryLayer = (receiver: OtlpReceiver, enabled: boolean) => {
  const problems: Array<string> = []
  const settings = resolveTelemetry(
    { enabled, exporter: { protocol: "http/protobuf", endpoint: receiver.endpoint, insecure: true } },
    { OTEL_METRIC_EXPORT_INTERVAL: "100000", OTEL_BSP_SCHEDULE_DELAY: "100000" },
    problems
  )
  expect(problems).toEqual([])
  return TelemetryLayer.layer({ telemetry: settings, log: { level: "info", format: "text", access: false } }, [
    "worker"
  ])
}

/**
 * A task table with every task created 5 s before the table (so a duration measured at any later
 * instant is at least 5 s) and fixed active counts; counts its queries.
 */
const fakeTasks = () => {
  const queries = { find: 0, activeCounts: 0 }
  const createdAt = new Date(Date.now() - 5_000)
  const service = {
    find: () =>
      Effect.sync(() => {
        queries.find++
        return Option.some({ createdAt } as TaskRow)
      }),
    activeCounts: () =>
      Effect.sync(() => {
        queries.activeCounts++
        return [
          { type: "archive", count: 2 },
          { type: "migrate_version", count: 1 }
        ]
      })
  } as unknown as TaskRepo["Service"]
  return { layer: Layer.succeed(TaskRepo, service), queries }
}

/** Four handler runs: a success with a database child, a failure, a suspension and its resumed run. */
const runs = Effect.gen(function* () {
  yield* observeTask("archive", "tsk_archive", Effect.void.pipe(Effect.withSpan("svc_db", { kind: "client" })))
  yield* Effect.exit(observeTask("migrate_version", "tsk_migrate", Effect.fail("the hook failed")))
  yield* Effect.exit(observeTask("disconnect_all", "tsk_all", Effect.interrupt))
  yield* observeTask("disconnect_all", "tsk_all", Effect.succeed({ total: 0, forced: 0 }))
})

/** The queue-size sampler, running until it has sampled once. */
const sampleQueue = (queries: { activeCounts: number }) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* Layer.build(queueSizeLayer(Duration.millis(10)))
      for (let waited = 0; queries.activeCounts === 0 && waited < 10_000; waited += 10) yield* Effect.sleep(10)
    })
  )

const settle = async (done: () => boolean) => {
  for (let waited = 0; !done() && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50))
  expect(done()).toBe(true)
}

describe("task-queue telemetry", () => {
  it("exports a span per handler run, the task duration once per ended task, and the queue size", async () => {
    const receiver = await startHttpReceiver()
    try {
      const tasks = fakeTasks()
      // Closing the layer flushes every exporter.
      await Effect.runPromise(
        Effect.gen(function* () {
          yield* runs
          yield* sampleQueue(tasks.queries)
        }).pipe(
          Effect.provide(tasks.layer),
          Effect.provide(telemetryLayer(receiver, true)),
          // A metric registry of this test's own (the process's default one is shared by the file).
          Effect.provideService(Metric.MetricRegistry, new Map())
        )
      )
      await settle(() => receiver.spans().length >= 5 && receiver.points().length > 0)

      const spans = receiver.spans()
      expect(spans.map((s) => s.name).sort()).toEqual(
        ["svc_db", "task archive", "task disconnect_all", "task disconnect_all", "task migrate_version"].sort()
      )
      const archive = spans.find((s) => s.name === "task archive")!
      expect(archive.resource["service.name"]).toBe("svc-worker")
      expect(archive.attributes).toEqual({ "svc.queue.task_type": "archive", "svc.queue.retry_count": 0 })
      expect(archive.status.code).toBe(0)
      expect(archive.parentSpanId).toBe("")
      // Work inside the handler hangs from the task's span.
      const db = spans.find((s) => s.name === "svc_db")!
      expect([db.traceId, db.parentSpanId]).toEqual([archive.traceId, archive.spanId])

      const migrate = spans.find((s) => s.name === "task migrate_version")!
      expect(migrate.status.code).toBe(2)
      expect(migrate.attributes).toEqual({
        "svc.queue.task_type": "migrate_version",
        "svc.queue.retry_count": 0,
        "error.type": "task_failed"
      })
      // The failure's message stays out of the span.
      expect(receiver.exports().some((e) => e.bytes.includes("the hook failed"))).toBe(false)

      // The suspended run and the resumed run that ended the task.
      const all = spans.filter((s) => s.name === "task disconnect_all")
      expect(all.map((s) => [s.attributes["svc.queue.retry_count"], s.status.code]).sort()).toEqual([
        [0, 0],
        [1, 0]
      ])

      const points = receiver.points()
      const durations = points.filter((p) => p.metric === "svc.queue.task.duration")
      expect(durations.every((p) => p.unit === "s" && p.type === "histogram")).toBe(true)
      expect(
        durations
          .map((p) => [p.attributes["svc.queue.task_type"], p.attributes.result, p.count])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0])))
      ).toEqual([
        ["archive", "completed", 1],
        ["disconnect_all", "completed", 1],
        ["migrate_version", "failed", 1]
      ])
      // Measured from the task's creation (5 s before), not from the run's start.
      for (const p of durations) expect(p.value).toBeGreaterThanOrEqual(5)
      expect(tasks.queries.find).toBe(3)

      const sizes = points.filter((p) => p.metric === "svc.queue.queue.size")
      expect(sizes.every((p) => p.type === "gauge")).toBe(true)
      expect(Object.fromEntries(sizes.map((p) => [p.attributes["svc.queue.task_type"], p.value]))).toEqual({
        disconnect_all: 0,
        archive: 2,
        disconnect: 0,
        migrate_version: 1
      })
    } finally {
      await receiver.close()
    }
  })

  it("serves the task metrics on the Prometheus scrape without OTLP", async () => {
    const receiver = await startHttpReceiver()
    try {
      const tasks = fakeTasks()
      const problems: Array<string> = []
      const settings = resolveTelemetry({ prometheus: { enabled: true } }, {}, problems)
      expect(problems).toEqual([])
      const text = await Effect.runPromise(
        Effect.gen(function* () {
          yield* runs
          yield* sampleQueue(tasks.queries)
          return (yield* TelemetryLayer.TelemetryRuntime).scrape?.()
        }).pipe(
          Effect.provide(tasks.layer),
          Effect.provide(
            TelemetryLayer.layer({ telemetry: settings, log: { level: "info", format: "text", access: false } }, [
              "worker"
            ])
          ),
          Effect.provideService(Metric.MetricRegistry, new Map())
        )
      )
      // The names the Grafana dashboard (docs/grafana/) queries.
      expect(text).toContain('svc_queue_queue_size{svc_queue_task_type="archive"} 2')
      expect(text).toContain('svc_queue_queue_size{svc_queue_task_type="disconnect"} 0')
      expect(text).toContain(
        'svc_queue_task_duration_seconds_count{svc_queue_task_type="migrate_version",result="failed"} 1'
      )
      expect(text).toContain(
        'svc_queue_task_duration_seconds_bucket{svc_queue_task_type="archive",result="completed",le="3600"} 1'
      )
      expect(receiver.exports()).toEqual([])
    } finally {
      await receiver.close()
    }
  })

  it("records nothing and queries nothing with telemetry off", async () => {
    const receiver = await startHttpReceiver()
    try {
      const tasks = fakeTasks()
      const telemetry = await Effect.runPromise(
        Effect.gen(function* () {
          yield* runs
          // The sampler layer builds, but starts nothing.
          yield* Effect.scoped(Layer.build(queueSizeLayer(Duration.millis(10))))
          return yield* Telemetry
        }).pipe(Effect.provide(tasks.layer), Effect.provide(telemetryLayer(receiver, false)))
      )
      expect(telemetry).toBe(noopTelemetry)
      expect(tasks.queries).toEqual({ find: 0, activeCounts: 0 })
      // No exporter was installed, so nothing was or will be sent.
      expect(receiver.exports()).toEqual([])
    } finally {
      await receiver.close()
    }
  })
})
