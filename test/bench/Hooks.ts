/**
 * Hook execution latency on its own (issue 18 item 7, first row): the hook rows of the migration
 * group (`Migration.ts`, which `run.ts --only migration` runs with the migrations-per-second rows)
 * without PostgreSQL: `HookSandbox.run` end to end — a fresh QuickJS runtime and context per hook,
 * the version's shared javascript, the hook expression, JSON output validated against
 * `HookResult` — one hook at a time (p50/p99) and with the pool saturated (hooks per second).
 * `node test/bench/Hooks.ts [hooks]` (default 2,000 measured after 200 warm-up).
 */
import * as os from "node:os"
import { formatMigration, measureHooks } from "./Migration.ts"

const measured = Number(process.argv[2] ?? 2000)
const poolSize = Math.min(4, Math.max(1, os.availableParallelism()))
const hooks = await measureHooks(measured, poolSize)
const title = `hook sandbox: ${poolSize} workers, node ${process.version}, ${os.cpus()[0]?.model ?? "cpu"}`
for (const line of formatMigration({ title, hooks, poolSize, runs: [], notes: [], ms: 0 })) console.log(line)
