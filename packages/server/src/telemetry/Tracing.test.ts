/**
 * The span tree of spec 8.3 (docs/telemetry.md "Traces"): the workflow engine's spans — its
 * internal execution and activity spans and the RPC client/server spans of effect's cluster —
 * are never exported, and a span started under one hangs from the nearest exported ancestor.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Tracer } from "effect"
import { type ExportedSpan, makeTracer, nowNanos } from "./Tracing.ts"

describe("svc tracer", () => {
  it.effect("exports no workflow or RPC span; their children hang from the exported parent", () =>
    Effect.gen(function* () {
      const pushed: Array<ExportedSpan> = []
      const tracer = makeTracer({ push: (span) => pushed.push(span) }, 1)
      const task = tracer.start("task disconnect", "internal", undefined, { "svc.queue.task_type": "disconnect" })
      yield* Effect.gen(function* () {
        yield* Effect.void.pipe(Effect.withSpan("svc_db", { kind: "client" }))
        yield* Effect.void.pipe(Effect.withSpan("oauth2.revoke"))
      }).pipe(
        // effect's cluster: an entity call over RPC (client), served by the runner (server) ...
        Effect.withSpan("RunnerServer.Envelope", {
          kind: "server",
          attributes: { "rpc.system.name": "effect_rpc", "rpc.method": "Envelope" }
        }),
        Effect.withSpan("Disconnect.client.Execute", {
          kind: "client",
          attributes: { "rpc.system.name": "effect_rpc", "rpc.method": "Execute" }
        }),
        // ... inside the workflow's execution and an activity.
        Effect.withSpan("RevokeTokens"),
        Effect.withSpan("Disconnect.execute"),
        Effect.provideService(Tracer.ParentSpan, task),
        Effect.provideService(Tracer.Tracer, tracer)
      )
      task.end(nowNanos(), Exit.void)
      assert.deepStrictEqual(pushed.map((s) => s.name).sort(), ["oauth2.revoke", "svc_db", "task disconnect"])
      for (const span of pushed.filter((s) => s !== task)) {
        assert.strictEqual(span.parentSpanId, task.spanId)
        assert.strictEqual(span.traceId, task.traceId)
      }
    })
  )
})
