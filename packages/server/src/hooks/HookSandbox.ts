/**
 * The hook sandbox (spec 2.10, issue 18): runs one connector migration hook — the version's shared
 * `javascript`, then the hook expression — in a fresh QuickJS context inside a pool of
 * `worker_threads`, so the main event loop never runs connector code. Per hook: a deadline
 * (QuickJS interrupt handler, plus a host watchdog that terminates a worker stuck past it), a
 * memory limit and a ~1 MB QuickJS stack (the worker's 32 MB thread stack makes deep recursion a
 * clean error); no host access; deterministic (`Date` absent, `eval` and Function constructors
 * refused, `Math.random` seeded by the caller). Output is JSON validated against `HookResult`.
 * A worker that crashed, timed out, hit a limit or was abandoned is replaced. Workers start at the
 * first hook (a process that never runs one starts none) and stop after a while unused
 * (`idleTimeout`): each holds about 40 MB (its V8 heap, QuickJS's WebAssembly memory, a 32 MB
 * stack reservation), which would otherwise stay after the last migration. Failures are
 * `HookFailed` with a reason and a message that never repeats the configuration's string values.
 */
import * as os from "node:os"
import { Worker } from "node:worker_threads"
import type { ErrorDetail } from "@svc/domain/Errors"
import { decodeHookResult, type HookResult, hookOutputMaxChars } from "@svc/domain/HookResult"
import { Context, Duration, Effect, Exit, Layer, Schema, Semaphore } from "effect"
import { expressionSource } from "./HookSyntax.ts"
import type { HookAnswer, HookJob } from "./HookWorker.ts"

/** Why a hook failed. */
export const HookFailureReason = Schema.Literals([
  "syntax",
  "runtime",
  "timeout",
  "memory",
  "stack",
  "invalid_output",
  "crashed"
])
export type HookFailureReason = typeof HookFailureReason.Type

/** A hook did not produce a valid `HookResult`; `message` names fields and rules, never secret values. */
export class HookFailed extends Schema.TaggedError<HookFailed>()("HookFailed", {
  reason: HookFailureReason,
  message: Schema.String,
  details: Schema.optionalKey(Schema.Array(Schema.Struct({ field: Schema.String, message: Schema.String })))
}) {}

/** One hook run. */
export interface HookRun {
  /** The version's shared script, run first as global code (its functions become globals). */
  readonly javascript?: string | undefined
  /** The hook: one JavaScript expression (`migrations.up.javascript` or `.down.javascript`). */
  readonly hook: string
  /** The connection's decrypted configuration (JSON). */
  readonly cfg: Readonly<Record<string, unknown>>
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
  /** Seeds `Math.random`: the same seed and inputs give the same output. */
  readonly seed: string
  /** Time the hook may run; clamped to the sandbox's `maxTimeout` (the default). */
  readonly timeout?: Duration.Input | undefined
}

/** Pool size and per-hook caps. */
export interface HookSandboxOptions {
  /** Worker threads (default: available parallelism, 1 to 4). */
  readonly poolSize?: number
  /** Longest a hook may run, whatever the caller asks (default 5 s). */
  readonly maxTimeout?: Duration.Input
  /** QuickJS heap limit per hook (default 32 MiB). */
  readonly memoryBytes?: number
  /** QuickJS stack limit per hook (default 1 MiB). */
  readonly stackBytes?: number
  /** Longest output, in characters of JSON (default `hookOutputMaxChars`, 1 MiB). */
  readonly maxOutputChars?: number
  /** An idle worker is stopped after this long unused (default 60 s); the next hook starts one again. */
  readonly idleTimeout?: Duration.Input
}

/** The stack of each worker thread: deep QuickJS recursion hits QuickJS's own limit first. */
export const workerStackSizeMb = 32
/** Extra time past a hook's deadline before the host terminates an unresponsive worker. */
const watchdogGraceMs = 1000
const workerUrl = new URL("./HookWorker.ts", import.meta.url)

interface Slot {
  readonly worker: Worker
  readonly ready: Promise<boolean>
  broken: boolean
  /** Set while the slot is idle: stops the worker when it fires. */
  idleTimer?: ReturnType<typeof setTimeout> | undefined
}

const spawn = (): Slot => {
  const worker = new Worker(workerUrl, {
    resourceLimits: { stackSizeMb: workerStackSizeMb, maxOldGenerationSizeMb: 128 }
  })
  worker.unref()
  const ready = new Promise<boolean>((resolve) => {
    worker.once("message", () => resolve(true))
    worker.once("error", () => resolve(false))
    worker.once("exit", () => resolve(false))
  })
  return { worker, ready, broken: false }
}

// cyrb128: four 32-bit words from a string seed.
const seedWords = (seed: string): readonly [number, number, number, number] => {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < seed.length; i++) {
    const k = seed.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}

/** Every string value inside `value` (iterative): what a failure message must not repeat. */
const stringsOf = (value: unknown): ReadonlyArray<string> => {
  const out = new Set<string>()
  const stack: Array<unknown> = [value]
  while (stack.length > 0) {
    const current = stack.pop()
    if (typeof current === "string") out.add(current)
    else if (Array.isArray(current)) stack.push(...current)
    else if (typeof current === "object" && current !== null) stack.push(...Object.values(current))
  }
  return [...out].sort((a, b) => b.length - a.length)
}

const failed = (reason: HookFailureReason, message: string, details?: ReadonlyArray<ErrorDetail>) =>
  new HookFailed(details === undefined ? { reason, message } : { reason, message, details })

/**
 * Failures after which a worker is replaced even though it answered: its WebAssembly heap grew
 * to the limit (it never shrinks) or the hook was stopped mid-way; a fresh worker is the clean state.
 */
const replacedAfter: ReadonlySet<HookFailureReason> = new Set(["timeout", "memory", "stack", "crashed"])

/** Sends one job to a slot's worker and waits for its answer, the watchdog, or a crash. */
const exchange = (slot: Slot, job: HookJob): Effect.Effect<HookAnswer> =>
  Effect.callback<HookAnswer>((resume) => {
    const { worker } = slot
    let settled = false
    const finish = (answer: HookAnswer, broken: boolean) => {
      if (settled) return
      settled = true
      slot.broken ||= broken
      cleanup()
      resume(Effect.succeed(answer))
    }
    const onMessage = (answer: HookAnswer) => {
      if (answer.id === job.id) finish(answer, !answer.ok && (answer.replace || replacedAfter.has(answer.reason)))
    }
    const onError = (error: Error) => {
      const outOfMemory = (error as { code?: unknown }).code === "ERR_WORKER_OUT_OF_MEMORY"
      finish(
        outOfMemory
          ? {
              id: job.id,
              ok: false,
              reason: "memory",
              message: "the hook exhausted the worker's memory",
              replace: true
            }
          : { id: job.id, ok: false, reason: "crashed", message: "the sandbox worker failed", replace: true },
        true
      )
    }
    const onExit = () =>
      finish({ id: job.id, ok: false, reason: "crashed", message: "the sandbox worker stopped", replace: true }, true)
    const watchdog = setTimeout(
      () =>
        finish(
          {
            id: job.id,
            ok: false,
            reason: "timeout",
            message: `the hook ran longer than ${job.timeoutMs} ms`,
            replace: true
          },
          true
        ),
      job.timeoutMs + watchdogGraceMs
    )
    const cleanup = () => {
      clearTimeout(watchdog)
      worker.off("message", onMessage)
      worker.off("error", onError)
      worker.off("exit", onExit)
    }
    worker.on("message", onMessage)
    worker.on("error", onError)
    worker.on("exit", onExit)
    worker.postMessage(job)
    // Interrupted by the caller: the worker may still be running the hook, so it is replaced.
    return Effect.sync(() => {
      if (settled) return
      settled = true
      slot.broken = true
      cleanup()
    })
  })

/** Runs connector migration hooks in sandboxed QuickJS workers. */
export class HookSandbox extends Context.Service<
  HookSandbox,
  {
    /** Runs one hook and returns its validated result. */
    readonly run: (input: HookRun) => Effect.Effect<HookResult, HookFailed>
    /** Worker threads alive now (idle or running a hook). */
    readonly workers: Effect.Effect<number>
  }
>()("@svc/server/HookSandbox") {
  /**
   * A pool of workers, each started at first use, stopped after `idleTimeout` unused, terminated
   * when the layer's scope closes.
   */
  static readonly layer = (options: HookSandboxOptions = {}): Layer.Layer<HookSandbox> =>
    Layer.effect(
      HookSandbox,
      Effect.gen(function* () {
        const poolSize = Math.max(
          1,
          Math.floor(options.poolSize ?? Math.min(4, Math.max(1, os.availableParallelism())))
        )
        const maxTimeoutMs = Duration.toMillis(Duration.fromInputUnsafe(options.maxTimeout ?? "5 seconds"))
        const memoryBytes = options.memoryBytes ?? 32 * 1024 * 1024
        const stackBytes = options.stackBytes ?? 1024 * 1024
        const maxOutputChars = options.maxOutputChars ?? hookOutputMaxChars
        const idleMs = Duration.toMillis(Duration.fromInputUnsafe(options.idleTimeout ?? "60 seconds"))

        const idle: Array<Slot> = []
        const all = new Set<Slot>()
        const retire = (slot: Slot) => {
          clearTimeout(slot.idleTimer)
          all.delete(slot)
          void slot.worker.terminate().catch(() => undefined)
        }
        // An idle slot stops its worker once unused for `idleMs` (the timer never keeps the process up).
        const release = (slot: Slot) => {
          slot.idleTimer = setTimeout(() => {
            const index = idle.indexOf(slot)
            if (index === -1) return
            idle.splice(index, 1)
            retire(slot)
          }, idleMs)
          slot.idleTimer.unref()
          idle.push(slot)
        }
        const add = () => {
          const slot = spawn()
          all.add(slot)
          release(slot)
        }
        // Workers start at first use (a process that never migrates a connection never starts
        // QuickJS), at most `poolSize` of them: the permits below bound the slots in use.
        const take = (): Slot => {
          if (idle.length === 0) add()
          const slot = idle.shift()!
          clearTimeout(slot.idleTimer)
          slot.idleTimer = undefined
          return slot
        }
        yield* Effect.acquireRelease(Effect.void, () =>
          Effect.promise(() =>
            Promise.all(
              [...all].map((slot) => {
                clearTimeout(slot.idleTimer)
                return slot.worker.terminate().catch(() => 0)
              })
            )
          ).pipe(Effect.andThen(Effect.sync(() => all.clear())))
        )
        const permits = yield* Semaphore.make(poolSize)
        let nextId = 0

        // Holds one permit, so a slot is idle or may be started; a broken slot is replaced on release.
        const withSlot = <A, E>(use: (slot: Slot) => Effect.Effect<A, E>) =>
          permits.withPermits(1)(
            Effect.acquireUseRelease(Effect.sync(take), use, (slot, exit) =>
              Effect.sync(() => {
                if (slot.broken || Exit.hasInterrupts(exit)) {
                  retire(slot)
                  add()
                } else release(slot)
              })
            )
          )

        const execute = Effect.fnUntraced(function* (slot: Slot, job: HookJob) {
          const started = yield* Effect.promise(() => slot.ready)
          if (!started) {
            slot.broken = true
            return yield* failed("crashed", "the sandbox worker did not start")
          }
          const answer = yield* exchange(slot, job)
          if (!answer.ok) return yield* failed(answer.reason, answer.message)
          return answer.output
        })

        const run = Effect.fn("HookSandbox.run")(function* (input: HookRun) {
          const requested =
            input.timeout === undefined ? maxTimeoutMs : Duration.toMillis(Duration.fromInputUnsafe(input.timeout))
          const timeoutMs = Math.max(1, Math.min(maxTimeoutMs, Math.floor(requested)))
          const hook = expressionSource(input.hook)
          const job: HookJob = {
            id: nextId++,
            javascript: input.javascript,
            hook,
            hookLineOffset: 1,
            inputs: JSON.stringify({ cfg: input.cfg, labels: input.labels, annotations: input.annotations }),
            seed: seedWords(input.seed),
            timeoutMs,
            memoryBytes,
            stackBytes,
            maxOutputChars,
            secrets: stringsOf(input.cfg)
          }
          const output = yield* withSlot((slot) => execute(slot, job))
          const parsed = yield* Effect.try({
            try: (): unknown => JSON.parse(output),
            catch: () => failed("invalid_output", "the output is not JSON")
          })
          return yield* decodeHookResult(parsed).pipe(
            Effect.mapError((details) =>
              failed(
                "invalid_output",
                `the output is not a valid hook result: ${details
                  .slice(0, 5)
                  .map((detail) => `${detail.field}: ${detail.message}`)
                  .join("; ")}${details.length > 5 ? `; and ${details.length - 5} more` : ""}`,
                details
              )
            )
          )
        })

        return HookSandbox.of({ run, workers: Effect.sync(() => all.size) })
      })
    )
}
