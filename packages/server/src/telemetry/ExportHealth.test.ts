/**
 * Exporter health (docs/telemetry.md "Exporter health") over a fake collector: failed attempts
 * counted by signal, a warning at most once a minute and one line on recovery, the state
 * `/healthz` shows, and `Retry-After` on a 503 holding the next attempt back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Logger } from "effect"
import { HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { makeExportHealth } from "./ExportHealth.ts"
import { Meter } from "./Metrics.ts"

/** A collector answering each attempt with the next of `answers` (then 200), counting attempts. */
const collector = (answers: Array<{ status: number; headers?: Record<string, string> }>) => {
  let attempts = 0
  const client = HttpClient.make((request) =>
    Effect.sync(() => {
      attempts++
      const answer = answers.shift() ?? { status: 200 }
      return HttpClientResponse.fromWeb(
        request,
        new Response(null, { status: answer.status, headers: answer.headers ?? {} })
      )
    })
  )
  return { client, attempts: () => attempts }
}

const post = (client: HttpClient.HttpClient, signal: string) =>
  Effect.ignore(client.execute(HttpClientRequest.post(`http://collector/v1/${signal}`)))

describe("exporter health", () => {
  it.effect("counts failed attempts by signal, logs once a minute, recovers, and shows on /healthz", () =>
    Effect.gen(function* () {
      const logged: Array<string> = []
      const meter = new Meter()
      const health = makeExportHealth(["traces", "metrics"], meter)
      const fake = collector([{ status: 503 }, { status: 503 }, { status: 500 }])
      const client = health.observe(fake.client)
      const run = <A, E>(effect: Effect.Effect<A, E>) =>
        effect.pipe(
          Effect.provide(Logger.layer([Logger.make((o) => logged.push(`${o.logLevel} ${String(o.message)}`))]))
        )
      yield* run(post(client, "traces"))
      yield* run(post(client, "traces"))
      assert.deepStrictEqual(health.report(), {
        traces: { status: "failing", error: "http 503", failures: 2 },
        metrics: { status: "ok", failures: 0 }
      })
      assert.strictEqual(logged.filter((l) => l.startsWith("Warn")).length, 1)
      assert.match(logged[0]!, /OTLP traces export failed \(http 503\)/)
      // A minute later the next failure is logged again.
      yield* TestClock.adjust(Duration.seconds(61))
      yield* run(post(client, "traces"))
      assert.strictEqual(logged.filter((l) => l.startsWith("Warn")).length, 2)
      yield* run(post(client, "traces"))
      assert.deepStrictEqual(health.report().traces, { status: "ok", failures: 3 })
      assert.match(logged.at(-1)!, /OTLP traces export recovered/)
      assert.deepStrictEqual(
        meter.series("svc.telemetry.export.failures.total").map((s) => [s.attributes, s.value]),
        [[{ signal: "traces" }, 3]]
      )
      // Not an export: not observed.
      yield* run(Effect.ignore(client.execute(HttpClientRequest.get("http://collector/other"))))
      assert.strictEqual(health.report().traces?.failures, 3)
    })
  )

  it.effect("holds the next attempt of a signal for the Retry-After of a 503", () =>
    Effect.gen(function* () {
      const health = makeExportHealth(["logs"], undefined)
      const fake = collector([{ status: 503, headers: { "retry-after": "30" } }])
      const client = health.observe(fake.client)
      yield* post(client, "logs")
      assert.strictEqual(fake.attempts(), 1)
      const next = yield* Effect.forkChild(post(client, "logs"))
      yield* TestClock.adjust(Duration.seconds(29))
      assert.strictEqual(fake.attempts(), 1)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* Fiber.join(next)
      assert.strictEqual(fake.attempts(), 2)
      assert.deepStrictEqual(health.report().logs, { status: "ok", failures: 1 })
    })
  )
})
