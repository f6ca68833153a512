/**
 * The worker thread of the hook sandbox: runs one hook at a time in a fresh QuickJS runtime and
 * context, under a deadline (interrupt handler), a memory limit and a stack limit, with nothing of
 * the host reachable. Loaded by `HookSandbox` with `new Worker(...)`; imports nothing but QuickJS,
 * so a worker starts without the rest of the server.
 */
import { parentPort } from "node:worker_threads"
import { DefaultIntrinsics, type QuickJSContext, type QuickJSHandle, newQuickJSWASMModule } from "quickjs-emscripten"

/** Why a hook failed (see `HookFailed` in HookSandbox.ts). */
export type HookFailureReason = "syntax" | "runtime" | "timeout" | "memory" | "stack" | "invalid_output" | "crashed"

/** One hook to run: sources already in their final form, inputs as one JSON document. */
export interface HookJob {
  readonly id: number
  /** The version's shared script (global code), or `undefined`. */
  readonly javascript: string | undefined
  /** The hook expression, wrapped as an expression statement. */
  readonly hook: string
  /** Lines the wrapper adds before the hook's first line. */
  readonly hookLineOffset: number
  /** `{"cfg":…,"labels":…,"annotations":…}` */
  readonly inputs: string
  /** Four 32-bit words seeding `Math.random`. */
  readonly seed: readonly [number, number, number, number]
  readonly timeoutMs: number
  readonly memoryBytes: number
  readonly stackBytes: number
  readonly maxOutputChars: number
  /** Strings a failure message must not repeat (the configuration's string values). */
  readonly secrets: ReadonlyArray<string>
}

/** The answer to a {@link HookJob}. */
export type HookAnswer =
  | { readonly id: number; readonly ok: true; readonly output: string }
  | {
      readonly id: number
      readonly ok: false
      readonly reason: HookFailureReason
      readonly message: string
      /** The worker's QuickJS module may be damaged: the pool replaces this worker. */
      readonly replace: boolean
    }

// Runs before any connector code, in the hook's own context; returns the output serialiser.
// Globals are plain JSON copies; `Math.random` is sfc32 from the caller's seed; `eval` and every
// Function constructor are gone; GC-observing globals are removed so nothing depends on timing.
const prelude = `(function (inputs, a, b, c, d) {
  "use strict";
  const stringify = JSON.stringify, parse = JSON.parse, define = Object.defineProperty;
  const data = parse(inputs);
  for (const name of ["cfg", "labels", "annotations"]) {
    define(globalThis, name, { value: data[name], writable: true, enumerable: false, configurable: true });
  }
  const random = function random() {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  define(Math, "random", { value: random, writable: true, enumerable: false, configurable: true });
  const refuse = function () { throw new EvalError("code generation from strings is disabled in hooks"); };
  for (const fn of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    define(Object.getPrototypeOf(fn), "constructor", { value: refuse, writable: false, enumerable: false, configurable: false });
  }
  for (const name of ["eval", "Function", "WeakRef", "FinalizationRegistry"]) delete globalThis[name];
  return function finish(value, max) {
    const text = stringify(value);
    if (typeof text !== "string") return -1;
    return text.length > max ? text.length : text;
  };
})`

type Failure = Omit<Extract<HookAnswer, { readonly ok: false }>, "id">

const maxMessage = 300
const maxScanned = 4096

// A message must not repeat a secret: exact configuration values, quoted fragments of them
// (QuickJS quotes the offending token, e.g. JSON.parse's "unexpected token: '…'"), and a secret's
// beginning left at the end of a truncated message.
const redact = (message: string, secrets: ReadonlyArray<string>): string => {
  let out = message.length > maxScanned ? message.slice(0, maxScanned) : message
  for (const secret of secrets) if (secret.length >= 3) out = out.split(secret).join("[redacted]")
  out = out.replace(/'([^']*)'|"([^"]*)"/g, (quoted, single: string | undefined, double: string | undefined) => {
    const inner = single ?? double ?? ""
    return inner.length > 0 && secrets.some((secret) => secret.includes(inner)) ? "'[redacted]'" : quoted
  })
  if (out.length <= maxMessage && message.length <= maxScanned) return out
  out = out.slice(0, maxMessage)
  for (const secret of secrets) {
    for (let k = Math.min(secret.length - 1, out.length); k >= 3; k--) {
      if (out.endsWith(secret.slice(0, k))) {
        out = out.slice(0, out.length - k)
        break
      }
    }
  }
  return `${out}…`
}

const field = (record: unknown, key: string): unknown =>
  typeof record === "object" && record !== null && key in record ? (record as Record<string, unknown>)[key] : undefined

// Where the error was raised, in the author's own lines of `file`.
const location = (stack: unknown, file: string, lineOffset: number): string => {
  if (typeof stack !== "string") return ""
  const match = new RegExp(`\\(${file.replace(".", "\\.")}:(\\d+):(\\d+)\\)`).exec(stack)
  if (match === null) return ""
  const line = Number(match[1]) - lineOffset
  return line >= 1 ? ` (${file === "hook.js" ? "hook" : "javascript"} line ${line}, column ${match[2]})` : ""
}

/** The deadline state of one run; `freeze` stops any hook code that reading an error would run. */
interface Guard {
  readonly timedOut: () => boolean
  readonly freeze: () => void
  readonly nearMemoryLimit: () => boolean
}

// Reads a thrown value without letting hook code run (getters, toJSON): the runtime is frozen.
const readThrown = (context: QuickJSContext, handle: QuickJSHandle, guard: Guard): unknown => {
  guard.freeze()
  try {
    return context.dump(handle)
  } catch {
    return { name: "Error", message: "(a thrown value that cannot be read)" }
  } finally {
    if (handle.alive) handle.dispose()
  }
}

const classify = (
  context: QuickJSContext,
  handle: QuickJSHandle,
  job: HookJob,
  guard: Guard,
  phase: "javascript" | "hook" | "output"
): Failure => {
  const dumped = readThrown(context, handle, guard)
  const name = field(dumped, "name")
  const message = field(dumped, "message")
  const text = typeof message === "string" ? message : ""
  if (guard.timedOut())
    return { ok: false, reason: "timeout", message: `the hook ran longer than ${job.timeoutMs} ms`, replace: false }
  // QuickJS throws `null` when it cannot even allocate the out-of-memory error.
  if (
    (name === "InternalError" && /out of memory|string too long/i.test(text)) ||
    (dumped === null && guard.nearMemoryLimit())
  ) {
    return {
      ok: false,
      reason: "memory",
      message: `the hook used more than ${job.memoryBytes} bytes of memory`,
      replace: false
    }
  }
  if ((name === "RangeError" || name === "InternalError") && /stack (size exceeded|overflow)/i.test(text)) {
    return { ok: false, reason: "stack", message: "the hook nested calls too deeply (stack limit)", replace: false }
  }
  const what =
    typeof dumped === "string"
      ? `a string: ${redact(dumped, job.secrets)}`
      : typeof dumped === "object" && dumped !== null
        ? `${typeof name === "string" ? redact(name, job.secrets) : "Error"}: ${redact(text, job.secrets)}`
        : dumped === null || dumped === undefined
          ? String(dumped)
          : `a ${typeof dumped}`
  if (phase === "output") {
    return {
      ok: false,
      reason: "invalid_output",
      message: `the output cannot be written as JSON: ${what}`,
      replace: false
    }
  }
  const where =
    phase === "hook"
      ? location(field(dumped, "stack"), "hook.js", job.hookLineOffset)
      : location(field(dumped, "stack"), "javascript.js", 0)
  const origin = phase === "hook" ? "the hook" : "the shared javascript"
  return { ok: false, reason: "runtime", message: `${origin} threw ${what}${where}`, replace: false }
}

const syntaxProblem = (
  context: QuickJSContext,
  source: string,
  file: string,
  lineOffset: number
): string | undefined => {
  const compiled = context.evalCode(source, file, { type: "global", compileOnly: true })
  if (compiled.error === undefined) {
    compiled.value.dispose()
    return undefined
  }
  const dumped: unknown = context.dump(compiled.error)
  compiled.error.dispose()
  const message = field(dumped, "message")
  // QuickJS reports a syntax error's position as the top frame of its stack.
  const stack = field(dumped, "stack")
  const match = typeof stack === "string" ? new RegExp(`${file.replace(".", "\\.")}:(\\d+):(\\d+)`).exec(stack) : null
  const line = match === null ? 0 : Number(match[1]) - lineOffset
  const where = match !== null && line >= 1 ? ` (line ${line}, column ${match[2]})` : ""
  return `${field(dumped, "name") === "SyntaxError" ? "SyntaxError" : "Error"}: ${typeof message === "string" ? message : "does not compile"}${where}`
}

const module = await newQuickJSWASMModule()

const runJob = (job: HookJob): HookAnswer => {
  const deadline = performance.now() + job.timeoutMs
  let timedOut = false
  let frozen = false
  const runtime = module.newRuntime()
  runtime.setMemoryLimit(job.memoryBytes)
  runtime.setMaxStackSize(job.stackBytes)
  runtime.setInterruptHandler(() => {
    if (frozen) return true
    if (performance.now() > deadline) timedOut = true
    return timedOut
  })
  const guard: Guard = {
    timedOut: () => timedOut,
    freeze: () => {
      frozen = true
    },
    nearMemoryLimit: () => {
      try {
        // A plain data property: reading it runs no code, so the frozen runtime allows it.
        const used = runtime
          .computeMemoryUsage()
          .consume((usage) => context.getProp(usage, "memory_used_size").consume((size) => context.getNumber(size)))
        return !(used < job.memoryBytes * 0.9)
      } catch {
        return true
      }
    }
  }
  // No `Date`: a hook cannot read the wall clock (spec 2.10: deterministic).
  const context = runtime.newContext({ intrinsics: { ...DefaultIntrinsics, Date: false } })
  try {
    if (job.javascript !== undefined) {
      const problem = syntaxProblem(context, job.javascript, "javascript.js", 0)
      if (problem !== undefined)
        return { id: job.id, ok: false, reason: "syntax", message: `the shared javascript: ${problem}`, replace: false }
    }
    const hookProblem = syntaxProblem(context, job.hook, "hook.js", job.hookLineOffset)
    if (hookProblem !== undefined)
      return { id: job.id, ok: false, reason: "syntax", message: `the hook: ${hookProblem}`, replace: false }

    const install = context.evalCode(prelude, "prelude.js", { type: "global" })
    if (install.error !== undefined)
      return { id: job.id, ...classify(context, install.error, job, guard, "javascript") }
    const args = [context.newString(job.inputs), ...job.seed.map((word) => context.newNumber(word))]
    const finished = context.callFunction(install.value, context.undefined, ...args)
    install.value.dispose()
    for (const arg of args) arg.dispose()
    if (finished.error !== undefined)
      return { id: job.id, ...classify(context, finished.error, job, guard, "javascript") }
    const finish = finished.value
    try {
      if (job.javascript !== undefined) {
        const shared = context.evalCode(job.javascript, "javascript.js", { type: "global" })
        if (shared.error !== undefined)
          return { id: job.id, ...classify(context, shared.error, job, guard, "javascript") }
        shared.value.dispose()
      }
      const evaluated = context.evalCode(job.hook, "hook.js", { type: "global" })
      if (evaluated.error !== undefined)
        return { id: job.id, ...classify(context, evaluated.error, job, guard, "hook") }
      let value = evaluated.value
      const state = context.getPromiseState(value)
      if (state.type !== "fulfilled" || state.notAPromise !== true) {
        // An async hook: settle its promise (no timers exist, so only the job queue can settle it).
        if (state.type === "fulfilled") state.value.dispose()
        if (state.type === "rejected") state.error.dispose()
        const jobs = runtime.executePendingJobs()
        if (jobs.error !== undefined) {
          value.dispose()
          return { id: job.id, ...classify(context, jobs.error, job, guard, "hook") }
        }
        const settled = context.getPromiseState(value)
        value.dispose()
        if (settled.type === "pending") {
          return {
            id: job.id,
            ok: false,
            reason: "invalid_output",
            message: "the hook returned a promise that never settled",
            replace: false
          }
        }
        if (settled.type === "rejected") return { id: job.id, ...classify(context, settled.error, job, guard, "hook") }
        value = settled.value
      }
      const serialised = context.callFunction(finish, context.undefined, value, context.newNumber(job.maxOutputChars))
      value.dispose()
      if (serialised.error !== undefined)
        return { id: job.id, ...classify(context, serialised.error, job, guard, "output") }
      const output: unknown = context.dump(serialised.value)
      serialised.value.dispose()
      if (typeof output === "string") return { id: job.id, ok: true, output }
      if (output === -1) {
        return {
          id: job.id,
          ok: false,
          reason: "invalid_output",
          message: "the hook returned a value JSON cannot represent (undefined or a function)",
          replace: false
        }
      }
      return {
        id: job.id,
        ok: false,
        reason: "invalid_output",
        message: `the output is ${String(output)} characters of JSON, more than the ${job.maxOutputChars} allowed`,
        replace: false
      }
    } finally {
      finish.dispose()
    }
  } finally {
    context.dispose()
    runtime.dispose()
  }
}

const answer = (job: HookJob): HookAnswer => {
  try {
    return runJob(job)
  } catch (cause) {
    // The host side of QuickJS failed (the WebAssembly stack or heap): this worker is retired.
    const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : "unknown failure"
    if (/call stack/i.test(text))
      return {
        id: job.id,
        ok: false,
        reason: "stack",
        message: "the hook nested calls too deeply (stack limit)",
        replace: true
      }
    if (/memory/i.test(text))
      return {
        id: job.id,
        ok: false,
        reason: "memory",
        message: `the hook used more than ${job.memoryBytes} bytes of memory`,
        replace: true
      }
    return {
      id: job.id,
      ok: false,
      reason: "crashed",
      message: "the sandbox failed while running the hook",
      replace: true
    }
  }
}

parentPort?.on("message", (job: HookJob) => {
  parentPort?.postMessage(answer(job))
})
parentPort?.postMessage("ready")
