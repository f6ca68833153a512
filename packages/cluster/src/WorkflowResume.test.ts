import { assert, describe, it } from "@effect/vitest"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import * as DemoWorkflowLive from "./testing/DemoWorkflowLive.ts"
import { spawnFixture } from "./testing/FixtureProcess.ts"
import { freshPgliteDir, sqlLayerFor } from "./testing/TestCluster.ts"

// A fresh database whose URL the fixture processes connect to.
const freshPostgresUrl = Effect.gen(function* () {
  const { url } = Context.get(yield* Layer.build(TestDatabase.postgres), TestDatabase.TestDatabase)
  if (url === undefined) return yield* Effect.die("TestDatabase.postgres has no url")
  return url
}).pipe(Effect.orDie)

const restartSuite = (
  kind: "postgres" | "pglite",
  freshTarget: Effect.Effect<string, never, Scope.Scope>,
  killSignal: NodeJS.Signals
) =>
  it.live(
    `resumes after ${killSignal} of the process without re-running step one`,
    () =>
      Effect.gen(function* () {
        const target = yield* freshTarget
        const id = "wf-restart-1"
        const stepExecutions = DemoWorkflowLive.stepExecutions(id).pipe(Effect.provide(sqlLayerFor(kind, target)))

        const first = yield* spawnFixture(["start", kind, target, id])
        const executionId = yield* first.waitFor("started")
        assert.strictEqual(yield* first.waitFor("step-one"), "1")
        yield* first.waitFor("suspended")
        const killed = yield* first.kill(killSignal)
        if (killSignal === "SIGKILL") assert.strictEqual(killed.signal, "SIGKILL")
        else assert.deepStrictEqual(killed, { code: 143, signal: null })

        assert.deepStrictEqual(yield* stepExecutions, { stepOne: 1, stepTwo: 0 })

        const second = yield* spawnFixture(["resume", kind, target, id])
        assert.strictEqual(yield* second.waitFor("resumed"), executionId)
        assert.strictEqual(yield* second.waitFor("completed"), `completed:${id}`)
        assert.strictEqual(yield* second.waitFor("steps"), "1 1")
        assert.deepStrictEqual(yield* second.exited(), { code: 0, signal: null })

        assert.deepStrictEqual(yield* stepExecutions, { stepOne: 1, stepTwo: 1 })
      }),
    { timeout: 90_000 }
  )

describe("DemoWorkflow on PostgreSQL", () => {
  restartSuite("postgres", freshPostgresUrl, "SIGKILL")
  restartSuite("postgres", freshPostgresUrl, "SIGTERM")
})

describe("DemoWorkflow on PGlite", () => {
  restartSuite("pglite", freshPgliteDir("workflow"), "SIGKILL")
})
