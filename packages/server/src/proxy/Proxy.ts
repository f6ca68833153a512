/**
 * The proxy data plane as a feature (spec 4.2): the one exchange of `_proxy` and `_proxy_raw`
 * behind its two doors, with its cached targets, its request-event writer and the callers the
 * warm door recognises.
 */
import { Layer } from "effect"
import { DataPlane } from "./DataPlane.ts"
import { ProxyCallers } from "./ProxyCallers.ts"
import { ProxyEvents } from "./ProxyEvents.ts"
import { ProxyTargets } from "./ProxyTargets.ts"

/**
 * `DataPlane` and `ProxyCallers`; needs the connection services, the outbound client, the
 * request-event sink, the process's `RequestLimiter`, the actor directory and the config.
 */
export const layerNoDeps = DataPlane.layerNoDeps.pipe(
  Layer.provide(Layer.mergeAll(ProxyTargets.layerNoDeps, ProxyEvents.layerNoDeps())),
  Layer.provideMerge(ProxyCallers.layerNoDeps)
)
