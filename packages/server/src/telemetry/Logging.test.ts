import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Logger } from "effect"
import { LogService, stderrLogger } from "./Logging.ts"

/** The JSON records `stderrLogger("json")` writes while `effect` runs. */
const recordsOf = (effect: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const original = console.error
    console.error = (line: string) => lines.push(line)
    try {
      yield* effect.pipe(Effect.provide(Logger.layer([stderrLogger("json")])))
    } finally {
      console.error = original
    }
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  })

describe("JSON log records", () => {
  it.effect("name the services of the process, in forked fibers too", () =>
    Effect.gen(function* () {
      const records = yield* recordsOf(
        Effect.gen(function* () {
          yield* Effect.logInfo("started")
          yield* Fiber.join(yield* Effect.forkChild(Effect.logWarning("from a fiber")))
        }).pipe(Effect.provideService(LogService, "api,public"))
      )
      assert.deepStrictEqual(
        records.map((r) => [r.message, r.level, r.service]),
        [
          ["started", "INFO", "api,public"],
          ["from a fiber", "WARN", "api,public"]
        ]
      )
    })
  )

  it.effect("have no service field outside `svc serve`", () =>
    Effect.gen(function* () {
      const [record] = yield* recordsOf(Effect.logInfo("migrating"))
      assert.isFalse(record !== undefined && "service" in record)
      assert.strictEqual(record?.message, "migrating")
    })
  )
})
