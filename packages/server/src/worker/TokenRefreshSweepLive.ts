/**
 * The background OAuth2 token refresh sweep on the worker (spec 8.3): one cluster singleton runs
 * the sweep, which refreshes the connections whose `token_refresh_due_at` has come.
 */
import { TokenRefreshSweepSingleton } from "@svc/domain/DurableNames"
import type { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { type Duration, Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import type { SvcConfig } from "../config/SvcConfig.ts"
import * as RefreshSweep from "../connections/RefreshSweep.ts"
import type { TokenRefresher } from "../connections/TokenRefresher.ts"

/** The singleton loop; a failed pass is logged and the next one runs after `pollInterval`. */
export const layerNoDeps = (options: {
  readonly pollInterval: Duration.Input
}): Layer.Layer<never, never, TokenRefresher | ConnectionRepo | SvcConfig | Sharding.Sharding> =>
  Singleton.make(
    TokenRefreshSweepSingleton,
    Effect.forever(
      RefreshSweep.pass.pipe(
        Effect.catchCause((cause) => Effect.logWarning("token refresh sweep pass failed; retrying", cause)),
        Effect.andThen(Effect.sleep(options.pollInterval))
      )
    )
  )
