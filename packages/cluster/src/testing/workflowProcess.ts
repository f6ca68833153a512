/**
 * Fixture process for the workflow restart tests: runs the single cluster runner with the demo
 * workflow on a given database and prints `progress <event> [detail]` lines on stdout.
 *
 *   node workflowProcess.ts start  <postgres|pglite> <url|dataDir> <id>
 *     starts the execution, reports `started`, `step-one`, `suspended`, then runs until killed
 *   node workflowProcess.ts resume <postgres|pglite> <url|dataDir> <id>
 *     signals the pause, waits for completion, reports `completed`, `steps`, and exits 0
 *
 * SIGTERM/SIGINT interrupt the program, which releases the runtime gracefully, then exit 143/130.
 * When stdin closes (the parent test process died) the process exits at once, so it never outlives a test run.
 */
import { Duration, Effect, Exit, Layer, Option, References, Schedule } from "effect"
import type { SqlClient } from "effect/sql"
import * as ClusterRuntime from "../ClusterRuntime.ts"
import { DemoWorkflow, proceed } from "./DemoWorkflow.ts"
import * as DemoWorkflowLive from "./DemoWorkflowLive.ts"
import { sqlLayerFor, testRuntimeOptions } from "./TestCluster.ts"

const [mode, kind, target, id] = process.argv.slice(2)
if ((mode !== "start" && mode !== "resume") || (kind !== "postgres" && kind !== "pglite") || !target || !id) {
  process.stderr.write("usage: workflowProcess.ts <start|resume> <postgres|pglite> <url|dataDir> <id>\n")
  process.exit(2)
}

const report = (event: string, detail = "") =>
  Effect.sync(() => process.stdout.write(`progress ${event}${detail === "" ? "" : ` ${detail}`}\n`))

/** Polls `check` every 50 ms until it yields a value; the caller bounds it with a timeout. */
const waitFor = <A, R>(check: Effect.Effect<Option.Option<A>, never, R>) =>
  check.pipe(
    Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: Option.isSome }),
    Effect.map(Option.getOrThrow),
    Effect.timeout(Duration.seconds(20)),
    Effect.orDie
  )

const start = Effect.gen(function* () {
  const executionId = yield* DemoWorkflow.execute({ id }, { discard: true })
  yield* report("started", executionId)
  const steps = yield* waitFor(
    DemoWorkflowLive.stepExecutions(id).pipe(Effect.map((s) => (s.stepOne > 0 ? Option.some(s) : Option.none())))
  )
  yield* report("step-one", String(steps.stepOne))
  yield* waitFor(
    DemoWorkflow.poll(executionId).pipe(Effect.map(Option.filter((result) => result._tag === "Suspended")))
  )
  yield* report("suspended")
  return yield* Effect.never
})

const resume = Effect.gen(function* () {
  const executionId = yield* DemoWorkflow.executionId({ id })
  yield* report("resumed", executionId)
  yield* proceed(id)
  const result = yield* waitFor(
    DemoWorkflow.poll(executionId).pipe(
      Effect.map(Option.flatMap((result) => (result._tag === "Complete" ? Option.some(result.exit) : Option.none())))
    )
  )
  yield* report("completed", Exit.isSuccess(result) ? result.value : "failure")
  const steps = yield* DemoWorkflowLive.stepExecutions(id)
  yield* report("steps", `${steps.stepOne} ${steps.stepTwo}`)
})

const runtime = (sql: Layer.Layer<SqlClient.SqlClient>) =>
  DemoWorkflowLive.layer.pipe(
    Layer.provideMerge(ClusterRuntime.layerSingle(testRuntimeOptions)),
    Layer.provideMerge(sql)
  )

const program = (mode === "start" ? start : resume).pipe(
  Effect.provide(runtime(sqlLayerFor(kind, target))),
  Effect.provideService(References.MinimumLogLevel, "Warn")
)

const fiber = Effect.runFork(program)
let signal: "SIGTERM" | "SIGINT" | undefined
const stop = (name: "SIGTERM" | "SIGINT") => () => {
  signal = name
  fiber.interruptUnsafe()
}
process.once("SIGTERM", stop("SIGTERM"))
process.once("SIGINT", stop("SIGINT"))
process.stdin.on("end", () => process.exit(3)).resume()
fiber.addObserver((exit) => {
  if (signal !== undefined) process.exit(signal === "SIGTERM" ? 143 : 130)
  if (Exit.isFailure(exit)) process.stderr.write(`${String(exit.cause)}\n`)
  process.exit(Exit.isSuccess(exit) ? 0 : 1)
})
