/**
 * The cleanup of abandoned setups on the worker (`connections.setup_ttl`, docs/connections.md):
 * one cluster singleton runs `SetupCleanup.pass` every quarter of the TTL (1 s to 5 minutes).
 */
import { SetupCleanupSingleton } from "@svc/domain/DurableNames"
import type { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { Duration, Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import type { SvcConfig } from "../config/SvcConfig.ts"
import type { ConnectionDisconnect } from "../connections/ConnectionDisconnect.ts"
import * as SetupCleanup from "../connections/SetupCleanup.ts"
import type { ResourceOps } from "../resources/ResourceOps.ts"

/** The singleton loop; a failed pass is logged and the next one runs after the interval. */
export const layerNoDeps = (options: {
  readonly setupTtlMs: number
}): Layer.Layer<never, never, ConnectionRepo | ConnectionDisconnect | ResourceOps | SvcConfig | Sharding.Sharding> =>
  Singleton.make(
    SetupCleanupSingleton,
    Effect.forever(
      SetupCleanup.pass.pipe(
        Effect.catchCause((cause) => Effect.logWarning("setup cleanup pass failed; retrying", cause)),
        Effect.andThen(Effect.sleep(Duration.millis(SetupCleanup.intervalMs(options.setupTtlMs))))
      )
    )
  )
