/**
 * Abandoned setups (docs/connections.md): a connection that has stood in state `setup` longer than
 * `connections.setup_ttl` since its last change (a user closed the Connect UI halfway, a verify
 * that never passed) is disconnected like any other (its credentials erased, OAuth2 tokens
 * revoked) and no longer listed. On the worker it runs as the cluster singleton of
 * `worker/SetupCleanupLive.ts`.
 */
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { Clock, Effect, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { ConnectionDisconnect } from "./ConnectionDisconnect.ts"

/** Setups taken per pass. */
export const batchSize = 50

/** How often the cleanup looks: a quarter of the TTL, from 1 s to 5 minutes. */
export const intervalMs = (setupTtlMs: number): number =>
  Math.min(5 * 60_000, Math.max(1000, Math.floor(setupTtlMs / 4)))

/** One pass: the abandoned setups (up to `batchSize`, oldest first) disconnected; answers how many. */
export const pass: Effect.Effect<
  { readonly removed: number },
  never,
  ConnectionRepo | ConnectionDisconnect | ResourceOps | SvcConfig
> = Effect.gen(function* () {
  const connections = yield* ConnectionRepo
  const disconnect = yield* ConnectionDisconnect
  const ops = yield* ResourceOps
  const config = yield* SvcConfig
  const cutoff = (yield* Clock.currentTimeMillis) - config.connections.setupTtlMs
  const ids = yield* Effect.orDie(connections.abandonedSetups(new Date(cutoff), batchSize))
  let removed = 0
  for (const id of ids) {
    // Read again: a setup finished since the listing is left alone.
    const row = yield* ops.find(Kinds.connections, id)
    if (Option.isNone(row) || row.value.state !== "setup") continue
    if ((yield* disconnect.disconnectById(id)) === "disconnected") removed++
  }
  if (removed > 0) yield* Effect.logInfo(`setup cleanup: ${removed} abandoned setup(s) removed`)
  return { removed }
}).pipe(Effect.withSpan("SetupCleanup.pass"))
