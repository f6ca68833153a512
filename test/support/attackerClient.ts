/**
 * Fixture process for the runner-port security test (issue item 4): an attacker who reaches a
 * runner's socket and nothing else — no database, no certificate — built only from the public
 * `effect` library. It declares its own `Connection` entity whose `reportUpstream429` is NOT
 * persisted (so the runner runs it straight from the socket instead of waiting for it in message
 * storage the attacker cannot write), registers the runner by hand in an in-memory runner storage
 * (one runner owns every shard) and reports a one-hour 429 for a connection.
 *
 *   node attackerClient.ts <runner host> <runner port> <connection id>
 *
 * Prints one JSON line: {"ok":true,"result":{consecutive429s,until}} when the runner executed the
 * report, {"ok":false,"error":"…"} when it failed or did not answer within 10 s; then exits.
 */
import { NodeClusterSocket } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import {
  Entity,
  MessageStorage,
  Runner,
  RunnerAddress,
  RunnerStorage,
  ShardingConfig,
  SocketRunner
} from "effect/cluster"
import { Rpc, RpcSerialization } from "effect/rpc"

const [host, port, connectionId] = process.argv.slice(2)
if (host === undefined || port === undefined || connectionId === undefined) {
  process.stderr.write("usage: attackerClient.ts <runner host> <runner port> <connection id>\n")
  process.exit(2)
}

const Millis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

// The wire shape of svc's `Connection` entity, minus the Persisted annotation.
const Connection = Entity.make("Connection", [
  Rpc.make("reportUpstream429", {
    payload: {
      observedAt: Millis,
      retryAfterMs: Schema.optionalKey(Millis),
      settings: Schema.optionalKey(Schema.Struct({ maxRetryAfterMs: Millis, defaultRetryAfterMs: Millis }))
    },
    success: Schema.Struct({ consecutive429s: Schema.Int, until: Schema.NullOr(Millis) })
  })
])

const program = Effect.gen(function* () {
  const storage = yield* RunnerStorage.RunnerStorage
  yield* storage.register(
    Runner.make({ address: RunnerAddress.make(host, Number(port)), groups: ["default"], weight: 1 }),
    true
  )
  const client = yield* Connection.client
  return yield* client(connectionId).reportUpstream429({
    observedAt: Date.now(),
    retryAfterMs: 3_600_000,
    settings: { maxRetryAfterMs: 3_600_000, defaultRetryAfterMs: 3_600_000 }
  })
})

const layer = SocketRunner.layerClientOnly.pipe(
  Layer.provide(NodeClusterSocket.layerClientProtocol),
  Layer.provide(MessageStorage.layerNoop),
  Layer.provideMerge(RunnerStorage.layerMemory),
  Layer.provide(ShardingConfig.layer({ refreshAssignmentsInterval: "100 millis" })),
  Layer.provide(RpcSerialization.layerSchemaBinary())
)

Effect.runPromise(
  program.pipe(
    Effect.timeout("10 seconds"),
    Effect.provide(layer),
    Effect.scoped,
    Effect.match({
      onSuccess: (result) => ({ ok: true, result }),
      onFailure: (error) => ({ ok: false, error: String(error) })
    })
  )
).then(
  (answer) => {
    process.stdout.write(`${JSON.stringify(answer)}\n`)
    process.exit(0)
  },
  (defect: unknown) => {
    process.stdout.write(`${JSON.stringify({ ok: false, error: String(defect) })}\n`)
    process.exit(0)
  }
)
