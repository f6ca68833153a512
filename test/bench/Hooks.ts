/**
 * Hook execution latency (issue 18 item 7, first row): `HookSandbox.run` end to end — a fresh
 * QuickJS runtime and context per hook, the version's shared javascript, the hook expression, JSON
 * output validated against `HookResult` — measured one hook at a time (latency: p50/p99) and with
 * the pool saturated (hooks per second). Standalone and bounded: `node test/bench/Hooks.ts
 * [hooks]` (default 2,000 measured after 200 warm-up); not part of `run.ts` yet.
 */
import * as os from "node:os"
import { HookSandbox } from "@svc/server/hooks/HookSandbox"
import { Effect } from "effect"

const javascript = `
function migrate(cfg, labels, annotations) {
  const endpoints = (cfg.endpoints || []).map((e) => ({ url: e.url.replace("http:", "https:"), weight: e.weight || 1 }))
  return {
    config: { set: { region: cfg.region || "us", endpoints, api_version: 2 }, unset: ["legacy_host"] },
    labels: { set: { tier: labels.tier === "gold" ? "platinum" : "silver", migrated: "v2" } },
    annotations: { set: { "example.com/migrated-by": "hook" } },
    notifications: cfg.scopes && cfg.scopes.includes("write")
      ? { unset: [{ key: "scopes.missing" }] }
      : { set: [{ key: "scopes.missing", level: "warning", title: "Grant write access", action_url: "/connections/x?action=reauth" }] }
  }
}
`

const input = {
  javascript,
  hook: "migrate(cfg, labels, annotations)",
  cfg: {
    region: "eu",
    token: "secret-token-value",
    legacy_host: "old.example.com",
    scopes: ["read"],
    endpoints: Array.from({ length: 10 }, (_, i) => ({ url: `http://api${i}.example.com/v1`, weight: i }))
  },
  labels: { tier: "gold", team: "payments" },
  annotations: { "example.com/owner": "someone@example.com" }
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

const measured = Number(process.argv[2] ?? 2000)
const warmup = 200
const poolSize = Math.min(4, Math.max(1, os.availableParallelism()))

const program = Effect.gen(function* () {
  const sandbox = yield* HookSandbox
  for (let i = 0; i < warmup; i++) yield* sandbox.run({ ...input, seed: `w${i}` })

  const latencies: Array<number> = []
  for (let i = 0; i < measured; i++) {
    const start = nowMs()
    yield* sandbox.run({ ...input, seed: `m${i}` })
    latencies.push(nowMs() - start)
  }
  latencies.sort((a, b) => a - b)

  const start = nowMs()
  yield* Effect.forEach(
    Array.from({ length: measured }, (_, i) => i),
    (i) => sandbox.run({ ...input, seed: `c${i}` }),
    { concurrency: poolSize * 2, discard: true }
  )
  const elapsed = nowMs() - start

  const trivial: Array<number> = []
  for (let i = 0; i < Math.min(measured, 1000); i++) {
    const begin = nowMs()
    yield* sandbox.run({ hook: "({})", cfg: {}, labels: {}, annotations: {}, seed: "t" })
    trivial.push(nowMs() - begin)
  }
  trivial.sort((a, b) => a - b)

  const row = (name: string, sorted: ReadonlyArray<number>) =>
    `${name.padEnd(34)} n=${sorted.length}  p50 ${percentile(sorted, 50).toFixed(2)} ms  p99 ${percentile(sorted, 99).toFixed(2)} ms  max ${sorted.at(-1)?.toFixed(2)} ms`
  console.log(`hook sandbox: ${poolSize} workers, node ${process.version}, ${os.cpus()[0]?.model ?? "cpu"}`)
  console.log(row("migration hook (sequential)", latencies))
  console.log(row("empty hook ({}) (sequential)", trivial))
  console.log(
    `${"migration hook (pool saturated)".padEnd(34)} n=${measured}  ${((measured / elapsed) * 1000).toFixed(0)} hooks/s`
  )
})

await Effect.runPromise(Effect.scoped(Effect.provide(program, HookSandbox.layer({ poolSize }))))
