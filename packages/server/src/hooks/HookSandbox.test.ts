import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { HookFailed, type HookRun, HookSandbox } from "./HookSandbox.ts"

const shared = `
function migrate(cfg, labels, annotations) {
  return {
    config: { set: { region: cfg.region ?? "us", retries: 3, flags: [true, false], nested: { a: 1 } }, unset: ["legacy"] },
    labels: { set: { tier: labels.tier === "gold" ? "platinum" : "silver" }, unset: ["old"] },
    annotations: { set: { "example.com/migrated": "v2" } },
    notifications: {
      set: [{ key: "quota.changed", level: "warning", title: "Quota changed", action_url: "https://example.com", metadata: { from: 1 } }],
      unset: [{ key: "quota.old" }]
    }
  }
}
function pick(list) { return list[Math.floor(Math.random() * list.length)] }
`

const secret = "s3cr3t-Token-Value"
const base: HookRun = {
  javascript: shared,
  hook: "migrate(cfg, labels, annotations)",
  cfg: { region: "eu", token: secret, legacy: "x" },
  labels: { tier: "gold", old: "1" },
  annotations: {},
  seed: "seed-1"
}

const failure = (run: HookRun) =>
  Effect.gen(function* () {
    const sandbox = yield* HookSandbox
    const exit = yield* Effect.exit(sandbox.run(run))
    if (Exit.isSuccess(exit)) return assert.fail(`expected a failure, got ${JSON.stringify(exit.value)}`)
    const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
    assert.instanceOf(error, HookFailed)
    assert.notInclude(error.message, secret)
    return error
  })

// After every hostile hook the same pool must still run a normal hook.
const stillServes = Effect.gen(function* () {
  const sandbox = yield* HookSandbox
  const result = yield* sandbox.run(base)
  assert.strictEqual(result.labels?.set?.tier, "platinum")
})

describe("HookSandbox", () => {
  it.layer(HookSandbox.layer({ poolSize: 2, maxTimeout: "2 seconds" }), { timeout: 60_000 })((it) => {
    it.effect("runs the shared javascript then the hook, with plain copies of the inputs", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        const result = yield* sandbox.run(base)
        assert.deepStrictEqual(result, {
          config: { set: { region: "eu", retries: 3, flags: [true, false], nested: { a: 1 } }, unset: ["legacy"] },
          labels: { set: { tier: "platinum" }, unset: ["old"] },
          annotations: { set: { "example.com/migrated": "v2" } },
          notifications: {
            set: [
              {
                key: "quota.changed",
                level: "warning",
                title: "Quota changed",
                action_url: "https://example.com",
                metadata: { from: 1 }
              }
            ],
            unset: [{ key: "quota.old" }]
          }
        })
        assert.deepStrictEqual(yield* sandbox.run({ ...base, javascript: undefined, hook: "({})" }), {})
        const asyncHook = yield* sandbox.run({ ...base, hook: "(async () => migrate(cfg, labels, annotations))()" })
        assert.strictEqual(asyncHook.labels?.set?.tier, "platinum")
      })
    )

    it.effect("the example of docs/migrations.md migrates up and back down", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        const javascript = `function toV2(cfg, labels) {
  const out = {
    config: { set: { base_url: "https://" + (cfg.host || "api.example.com") }, unset: ["host"] },
    labels: { set: { "example.com/schema": "v2" } }
  }
  if (cfg.region === undefined) {
    out.notifications = {
      set: [{ key: "region.missing", level: "warning", title: "Choose a region",
              action_url: "/connections?action=configure" }]
    }
  }
  return out
}`
        const inputs = { cfg: { host: "api.acme.test" }, labels: {}, annotations: {}, seed: "s" }
        assert.deepStrictEqual(yield* sandbox.run({ ...inputs, javascript, hook: "toV2(cfg, labels)" }), {
          config: { set: { base_url: "https://api.acme.test" }, unset: ["host"] },
          labels: { set: { "example.com/schema": "v2" } },
          notifications: {
            set: [
              {
                key: "region.missing",
                level: "warning",
                title: "Choose a region",
                action_url: "/connections?action=configure"
              }
            ]
          }
        })
        const down = `({ config: { set: { host: cfg.base_url.replace("https://", "") }, unset: ["base_url"] },
   labels: { unset: ["example.com/schema"] },
   notifications: { unset: [{ key: "region.missing" }] } })`
        assert.deepStrictEqual(
          yield* sandbox.run({ ...inputs, javascript, hook: down, cfg: { base_url: "https://api.acme.test" } }),
          {
            config: { set: { host: "api.acme.test" }, unset: ["base_url"] },
            labels: { unset: ["example.com/schema"] },
            notifications: { unset: [{ key: "region.missing" }] }
          }
        )
      })
    )

    it.effect("is deterministic: the same seed gives the same output; no wall clock", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        const hook = "({ labels: { set: { a: String(Math.random()).slice(2, 12), b: pick(['x', 'y', 'z']) } } })"
        const first = yield* sandbox.run({ ...base, hook, seed: "connection-1" })
        const again = yield* sandbox.run({ ...base, hook, seed: "connection-1" })
        const other = yield* sandbox.run({ ...base, hook, seed: "connection-2" })
        assert.deepStrictEqual(first, again)
        assert.notDeepEqual(first, other)
        const clock = yield* sandbox.run({
          ...base,
          hook: "({ labels: { set: { date: typeof Date, now: typeof performance, timers: typeof setTimeout } } })"
        })
        assert.deepStrictEqual(clock.labels?.set, { date: "undefined", now: "undefined", timers: "undefined" })
      })
    )

    it.effect("exposes nothing of the host on globalThis", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        const result = yield* sandbox.run({
          ...base,
          javascript: undefined,
          hook: "({ config: { set: { globals: Object.getOwnPropertyNames(globalThis).sort() } } })"
        })
        const globals = result.config?.set?.globals
        assert.isTrue(Array.isArray(globals))
        for (const name of [
          "require",
          "process",
          "fetch",
          "setTimeout",
          "setInterval",
          "eval",
          "Function",
          "Date",
          "module",
          "WebAssembly",
          "console"
        ]) {
          assert.notInclude(globals as ReadonlyArray<string>, name, name)
        }
      })
    )

    it.effect("for(;;){} times out at the caller's deadline", () =>
      Effect.gen(function* () {
        const error = yield* failure({ ...base, hook: "(() => { for(;;){} })()", timeout: "200 millis" })
        assert.strictEqual(error.reason, "timeout")
        assert.strictEqual(error.message, "the hook ran longer than 200 ms")
        yield* stillServes
      })
    )

    it.effect("a caller that gives up frees its worker (the busy worker is replaced)", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        for (let i = 0; i < 3; i++) {
          const exit = yield* Effect.exit(
            sandbox
              .run({ ...base, hook: "(() => { for(;;){} })()" })
              .pipe(Effect.timeout("50 millis"), TestClock.withLive)
          )
          assert.isTrue(Exit.isFailure(exit))
        }
        yield* Effect.all([stillServes, stillServes], { concurrency: "unbounded" })
      })
    )

    it.effect("catastrophic regex backtracking times out", () =>
      Effect.gen(function* () {
        const error = yield* failure({
          ...base,
          hook: "/^(a+)+$/.test('a'.repeat(40) + 'b')",
          timeout: "200 millis"
        })
        assert.strictEqual(error.reason, "timeout")
        yield* stillServes
      })
    )

    it.effect("a hook stuck in native code past its deadline is stopped (watchdog or QuickJS)", () =>
      Effect.gen(function* () {
        const error = yield* failure({
          ...base,
          hook: "(() => { const a = []; for (;;) a.push(new Array(1e5).fill(1)) })()",
          timeout: "100 millis"
        })
        assert.oneOf(error.reason, ["timeout", "memory"])
        yield* stillServes
      })
    )

    it.effect("a timeout longer than the cap is clamped to the cap", () =>
      Effect.gen(function* () {
        const error = yield* failure({ ...base, hook: "(() => { while (true) {} })()", timeout: "1 hour" })
        assert.strictEqual(error.reason, "timeout")
        assert.strictEqual(error.message, "the hook ran longer than 2000 ms")
        yield* stillServes
      })
    )

    it.effect("deep recursion fails with reason stack", () =>
      Effect.gen(function* () {
        const error = yield* failure({ ...base, hook: "(function f(n) { return f(n + 1) + 1 })(0)" })
        assert.strictEqual(error.reason, "stack")
        const nested = yield* failure({ ...base, hook: "JSON.parse('['.repeat(1e6))" })
        assert.oneOf(nested.reason, ["stack", "runtime"])
        yield* stillServes
      })
    )

    it.effect("this.constructor.constructor('return process')() cannot build code from strings", () =>
      Effect.gen(function* () {
        const error = yield* failure({ ...base, hook: "this.constructor.constructor('return process')()" })
        assert.strictEqual(error.reason, "runtime")
        assert.match(error.message, /^the hook threw EvalError: code generation from strings is disabled in hooks/)
        for (const hook of [
          "eval('1')",
          "(async function () {}).constructor('return 1')",
          "(function* () {}).constructor('return 1')",
          "Object.getPrototypeOf(() => 1).constructor('return 1')()"
        ]) {
          const refused = yield* failure({ ...base, hook })
          assert.strictEqual(refused.reason, "runtime", hook)
        }
        yield* stillServes
      })
    )

    it.effect("prototype tricks stay inside the hook's own context", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        const polluted = yield* sandbox.run({
          ...base,
          hook: "(Object.prototype.polluted = 'yes', Array.prototype.push = null, JSON.stringify = () => '{}', { labels: { set: { a: 'b' } } })"
        })
        assert.deepStrictEqual(polluted, { labels: { set: { a: "b" } } })
        const clean = yield* sandbox.run({
          ...base,
          javascript: undefined,
          hook: "({ labels: { set: { p: String(({}).polluted) } } })"
        })
        assert.deepStrictEqual(clean, { labels: { set: { p: "undefined" } } })
        const getter = yield* failure({
          ...base,
          hook: "({ get config() { throw new Error('nope') } })"
        })
        assert.strictEqual(getter.reason, "invalid_output")
        const proto = yield* failure({
          ...base,
          hook: 'JSON.parse(\'{"__proto__": {"x": 1}, "labels": {"set": {}}}\')'
        })
        assert.strictEqual(proto.reason, "invalid_output")
        yield* stillServes
      })
    )

    it.effect("hostile thrown values and toJSON are read without running hook code past the deadline", () =>
      Effect.gen(function* () {
        const getter = yield* failure({
          ...base,
          hook: "(() => { throw { get message() { for (;;) {} }, get name() { for (;;) {} } } })()",
          timeout: "300 millis"
        })
        assert.strictEqual(getter.reason, "runtime")
        const thrownNull = yield* failure({ ...base, hook: "(() => { throw null })()" })
        assert.deepStrictEqual([thrownNull.reason, thrownNull.message], ["runtime", "the hook threw null"])
        const thrownString = yield* failure({ ...base, hook: "(() => { throw 'x'.repeat(1e7) })()" })
        assert.strictEqual(thrownString.reason, "runtime")
        assert.isAtMost(thrownString.message.length, 400)
        const thrownSecret = yield* failure({ ...base, hook: "(() => { throw 'x'.repeat(290) + cfg.token })()" })
        assert.notInclude(thrownSecret.message, secret.slice(0, 3))
        const thrownPromise = yield* failure({ ...base, hook: "(() => { throw Promise.resolve(1) })()" })
        assert.strictEqual(thrownPromise.reason, "runtime")
        const toJson = yield* failure({ ...base, hook: "({ toJSON() { for (;;) {} } })", timeout: "300 millis" })
        assert.strictEqual(toJson.reason, "timeout")
        const cyclic = yield* failure({ ...base, hook: "(() => { const a = {}; a.a = a; return a })()" })
        assert.strictEqual(cyclic.reason, "invalid_output")
        const rejected = yield* failure({ ...base, hook: "Promise.reject(new TypeError('no'))" })
        assert.deepStrictEqual(
          [rejected.reason, rejected.message],
          ["runtime", "the hook threw TypeError: no (hook line 1, column 29)"]
        )
        yield* stillServes
      })
    )

    it.effect("huge output fails with reason invalid_output", () =>
      Effect.gen(function* () {
        const error = yield* failure({ ...base, hook: "({ config: { set: { big: 'x'.repeat(2e6) } } })" })
        assert.strictEqual(error.reason, "invalid_output")
        assert.match(error.message, /^the output is \d+ characters of JSON, more than the 1048576 allowed$/)
        yield* stillServes
      })
    )

    it.effect("syntax and runtime errors name where, never the secret values", () =>
      Effect.gen(function* () {
        const syntax = yield* failure({ ...base, javascript: "function (", hook: "1" })
        assert.strictEqual(syntax.reason, "syntax")
        assert.match(syntax.message, /^the shared javascript: SyntaxError: /)
        const thrown = yield* failure({ ...base, hook: "(() => { throw new Error('bad token ' + cfg.token) })()" })
        assert.strictEqual(thrown.reason, "runtime")
        assert.strictEqual(thrown.message, "the hook threw Error: bad token [redacted] (hook line 1, column 25)")
        const parsed = yield* failure({ ...base, cfg: { json: `{"a": ${secret}}` }, hook: "JSON.parse(cfg.json)" })
        assert.strictEqual(parsed.reason, "runtime")
        assert.notInclude(parsed.message, "s3cr3t")
      })
    )

    it.effect("output is validated against HookResult: label rules, svc/ keys, svc. notices, unknown sections", () =>
      Effect.gen(function* () {
        for (const hook of [
          "({ labels: { set: { 'svc/cxn/x': 'a' } } })",
          "({ labels: { set: { tier: 'not valid!' } } })",
          "({ annotations: { unset: ['svc/x'] } })",
          "({ notifications: { set: [{ key: 'svc.reauth', level: 'warning', title: 't' }] } })",
          "({ notifications: { unset: [{ key: 'svc.setup' }] } })",
          "({ confg: { set: {} } })",
          "42",
          "undefined"
        ]) {
          const error = yield* failure({ ...base, hook })
          assert.strictEqual(error.reason, "invalid_output", hook)
        }
        const labeled = yield* failure({ ...base, hook: `({ labels: { set: { tier: cfg.token + '!' } } })` })
        assert.deepStrictEqual(labeled.details, [
          { field: "output.labels.set.tier", message: "a label value may contain only alphanumerics, '-', '_' and '.'" }
        ])
      })
    )

    it.effect("runs hooks concurrently across the pool", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        const results = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, i) => i),
          (i) => sandbox.run({ ...base, javascript: undefined, hook: `({ labels: { set: { i: '${i}' } } })` }),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          results.map((result) => result.labels?.set?.i),
          ["0", "1", "2", "3", "4", "5", "6", "7"]
        )
      })
    )
  })

  it.layer(HookSandbox.layer({ poolSize: 2, maxTimeout: "2 seconds", idleTimeout: "300 millis" }), {
    timeout: 60_000
  })((it) => {
    it.effect("starts workers at the first hook and stops them once idle; the next hook starts one again", () =>
      Effect.gen(function* () {
        const sandbox = yield* HookSandbox
        assert.strictEqual(yield* sandbox.workers, 0)
        const labels = (i: number) => ({ ...base, javascript: undefined, hook: `({ labels: { set: { i: '${i}' } } })` })
        const results = yield* Effect.forEach([0, 1], (i) => sandbox.run(labels(i)), { concurrency: "unbounded" })
        assert.deepStrictEqual(
          results.map((result) => result.labels?.set?.i),
          ["0", "1"]
        )
        assert.strictEqual(yield* sandbox.workers, 2)
        // Used again within the idle time: kept.
        yield* sandbox.run(labels(2))
        assert.isAbove(yield* sandbox.workers, 0)
        let waited = 0
        while ((yield* sandbox.workers) > 0 && waited < 20_000) {
          // real time: the idle timers are the host's, not the test clock's
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
          waited += 50
        }
        assert.strictEqual(yield* sandbox.workers, 0)
        yield* stillServes
        assert.strictEqual(yield* sandbox.workers, 1)
      })
    )
  })

  // The memory limit, with a time cap far above what filling 32 MiB takes even on a loaded machine,
  // so the reason is memory rather than the deadline racing it.
  it.layer(HookSandbox.layer({ poolSize: 1, maxTimeout: "60 seconds" }), { timeout: 180_000 })((it) => {
    it.effect("a memory bomb fails with reason memory", () =>
      Effect.gen(function* () {
        const error = yield* failure({
          ...base,
          hook: "(() => { const a = []; for (let i = 0; ; i++) a.push({ i }) })()"
        })
        assert.strictEqual(error.reason, "memory")
        const strings = yield* failure({ ...base, hook: "(() => { let s = 'x'; for (;;) s += s })()" })
        assert.strictEqual(strings.reason, "memory")
        yield* stillServes
      })
    )
  })
})
