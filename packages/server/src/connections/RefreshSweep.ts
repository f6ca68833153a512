/**
 * The background OAuth2 token refresh sweep (spec 8.3): every `oauth2.refresh_sweep_interval` the
 * connections whose `token_refresh_due_at` falls before the next pass are refreshed, a few at a
 * time, through the same single-flight path as requests. On the worker it runs as the cluster
 * singleton of `worker/TokenRefreshSweepLive.ts`; `layer` is a plain in-process
 * loop for a deployment without the cluster runtime.
 */
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { Clock, Duration, Effect, Layer } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { TokenRefresher } from "./TokenRefresher.ts"

/** Connections taken per pass. */
export const batchSize = 50

/** Refreshes running at once. */
export const concurrency = 4

/**
 * One pass: the due connections (up to `batchSize`, soonest first) refreshed with bounded
 * concurrency; counts what happened. Due means before now plus one sweep interval, the same
 * lookahead `TokenRefresher.refreshNow` applies, so a token is refreshed by the pass before it
 * would be due rather than the one after.
 */
export const pass: Effect.Effect<
  { readonly refreshed: number; readonly failed: number; readonly skipped: number },
  never,
  TokenRefresher | ConnectionRepo | SvcConfig
> = Effect.gen(function* () {
  const refresher = yield* TokenRefresher
  const connections = yield* ConnectionRepo
  const config = yield* SvcConfig
  const now = yield* Clock.currentTimeMillis
  const ids = yield* Effect.orDie(
    connections.dueForRefresh(new Date(now + config.oauth2.refreshSweepIntervalMs), batchSize)
  )
  const results = yield* Effect.forEach(
    ids,
    (id) =>
      refresher
        .refreshNow(id)
        .pipe(
          Effect.catchCause((cause) =>
            Effect.as(
              Effect.logWarning(`token refresh sweep: connection ${id} could not be refreshed`, cause),
              "failed"
            )
          )
        ),
    { concurrency }
  )
  const counts = {
    refreshed: results.filter((result) => result === "refreshed").length,
    failed: results.filter((result) => result === "failed").length,
    skipped: results.filter((result) => result === "skipped").length
  }
  if (ids.length > 0) {
    yield* Effect.logDebug(
      `token refresh sweep: ${counts.refreshed} refreshed, ${counts.failed} failed, ${counts.skipped} skipped`
    )
  }
  return counts
}).pipe(Effect.withSpan("RefreshSweep.pass"))

/** The sweep as a loop forked for the life of the layer (one per process; prefer the singleton). */
export const layerNoDeps: Layer.Layer<never, never, TokenRefresher | ConnectionRepo | SvcConfig> = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* SvcConfig
    const interval = Duration.millis(config.oauth2.refreshSweepIntervalMs)
    yield* Effect.forkScoped(
      Effect.forever(
        pass.pipe(
          Effect.catchCause((cause) => Effect.logWarning("token refresh sweep pass failed; retrying", cause)),
          Effect.andThen(Effect.sleep(interval))
        )
      )
    )
  })
)
