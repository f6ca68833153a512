/**
 * The background OAuth2 token refresh sweep on the worker (spec 8.3): one cluster singleton ticks
 * the sweep, which refreshes the connections whose `token_refresh_due_at` has come. The sweep
 * itself lives with the server's refresher; it is provided as `TokenRefreshTick`.
 */
import { Context, type Duration, Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"

/**
 * Cluster singleton name of the sweep. Durable (never renamed); it belongs with the others in
 * `@svc/domain/DurableNames` and should move there.
 */
export { TokenRefreshSweepSingleton } from "@svc/domain/DurableNames"
import { TokenRefreshSweepSingleton } from "@svc/domain/DurableNames"

/** One sweep pass: refresh what is due. */
export class TokenRefreshTick extends Context.Service<TokenRefreshTick, { readonly tick: Effect.Effect<void> }>()(
  "@svc/cluster/TokenRefreshTick"
) {}

/** The singleton loop; a failed pass is logged and the next one runs after `pollInterval`. */
export const layer = (options: {
  readonly pollInterval: Duration.Input
}): Layer.Layer<never, never, TokenRefreshTick | Sharding.Sharding> =>
  Singleton.make(
    TokenRefreshSweepSingleton,
    Effect.gen(function* () {
      const sweep = yield* TokenRefreshTick
      return yield* Effect.forever(
        sweep.tick.pipe(
          Effect.catchCause((cause) => Effect.logWarning("token refresh sweep pass failed; retrying", cause)),
          Effect.andThen(Effect.sleep(options.pollInterval))
        )
      )
    })
  )
