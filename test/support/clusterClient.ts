/**
 * Fixture process for the multi-process cluster test: a client-only cluster member on PostgreSQL
 * (the shape of an api process: owns no shards, opens no listener) that calls the `Connection`
 * entity on request. One JSON command per stdin line, one JSON answer per stdout line:
 *
 *   {"id":1,"op":"report429","connectionId":"cxn_…"}      → {"id":1,"ok":true,"result":…,"ms":1.2}
 *   ops: report429, coolDown, acquire (owner, ttlMs), release (owner), inspect, whereabouts
 *
 *   node clusterClient.ts <postgres url> [<cluster timings>] [<certificates directory>]
 *
 * `<cluster timings>` (optional) is a JSON object of `ClusterRuntime.ClusterOptions` durations in
 * milliseconds (e.g. `{"shardLockExpiration":10000,"refreshAssignmentsInterval":1000}`), and
 * `shardsPerGroup`: what an api process takes from its `cluster.*` config. Without it the client
 * runs on the library defaults (35 s lock expiration, 3 s assignment refresh, 1 min health check).
 * `<certificates directory>` (optional) holds what `svc certs --out` writes (`ca.pem`, `runner.pem`,
 * `runner-key.pem`): the client then dials the runners over mutual TLS, as an api process with
 * `cluster.tls` does.
 *
 * It prints `ready` once the cluster client is built and exits when stdin closes, so it never
 * outlives the test that started it.
 */
import * as ClusterRuntime from "@svc/cluster/ClusterRuntime"
import { ConnectionEntity } from "@svc/cluster/ConnectionEntity"
import * as PgClient from "@svc/sql/PgClient"
import { Duration, Effect, Layer, Option, Queue, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"

interface Command {
  readonly id: number
  readonly op: string
  readonly connectionId: string
  readonly owner?: string
  readonly ttlMs?: number
}

const [url, timings, certs] = process.argv.slice(2)
if (url === undefined) {
  process.stderr.write("usage: clusterClient.ts <postgres url> [<cluster timings JSON>] [<certificates directory>]\n")
  process.exit(2)
}
const pem = (file: string) => fs.readFileSync(path.join(certs ?? "", file), "utf8")
const clusterOptions: ClusterRuntime.ClusterOptions = {
  ...(Object.fromEntries(
    Object.entries(JSON.parse(timings ?? "{}") as Record<string, number>).map(([key, value]) => [
      key,
      key === "shardsPerGroup" ? value : Duration.millis(value)
    ])
  ) as ClusterRuntime.ClusterOptions),
  tls:
    certs === undefined
      ? undefined
      : { ca: pem("ca.pem"), cert: pem("runner.pem"), key: Redacted.make(pem("runner-key.pem")) }
}

const write = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`)

const plain = (value: unknown): unknown =>
  Option.isOption(value) ? (Option.isSome(value) ? plain(value.value) : null) : value

const program = Effect.gen(function* () {
  const client = yield* ConnectionEntity.client
  const commands = yield* Queue.unbounded<Command>()
  const lines = readline.createInterface({ input: process.stdin })
  lines.on("line", (line) => {
    if (line.trim() !== "") Queue.offerUnsafe(commands, JSON.parse(line) as Command)
  })
  lines.on("close", () => process.exit(0))
  write({ ready: true })
  const run = (command: Command) => {
    const entity = client(command.connectionId)
    switch (command.op) {
      case "report429":
        return Effect.map(entity.reportUpstream429({ observedAt: Date.now() }), (c) => ({
          consecutive429s: c.consecutive429s,
          until: plain(c.until)
        }))
      case "coolDown":
        return Effect.map(entity.coolDown(), (c) => ({ consecutive429s: c.consecutive429s, until: plain(c.until) }))
      case "acquire":
        return entity.acquireMigrationLock({ owner: command.owner ?? "", ttlMs: command.ttlMs ?? 60_000 })
      case "release":
        return entity.releaseMigrationLock({ owner: command.owner ?? "" })
      case "inspect":
        return Effect.map(entity.inspectMigrationLock(), plain)
      case "whereabouts":
        return entity.whereabouts()
      default:
        return Effect.fail(new Error(`unknown op ${command.op}`))
    }
  }
  while (true) {
    const command = yield* Queue.take(commands)
    yield* Effect.forkDetach(
      Effect.gen(function* () {
        const started = performance.now()
        const result = yield* Effect.result(run(command) as Effect.Effect<unknown, unknown>)
        const ms = performance.now() - started
        write(
          result._tag === "Success"
            ? { id: command.id, ok: true, result: result.success, ms }
            : { id: command.id, ok: false, error: String(result.failure), ms }
        )
      })
    )
  }
})

const layer = ClusterRuntime.layerClient(clusterOptions).pipe(
  Layer.provide(Layer.orDie(PgClient.layer({ url, poolSize: 4 })))
)

Effect.runFork(program.pipe(Effect.provide(layer), Effect.scoped))
