/**
 * The proxy data plane as a feature (spec 4.2): the pipeline of `_proxy` and `_proxy_raw` with
 * its cached targets and its request-event writer, and the callers its fast path recognises.
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
export const layerNoDeps = Layer.merge(
  DataPlane.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(ProxyTargets.layerNoDeps, ProxyEvents.layerNoDeps()))),
  ProxyCallers.layerNoDeps
)
