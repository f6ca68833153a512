/**
 * Rate limiting as a feature (spec 2.8, 2.9, 4.6): the process's rule cache and the limiter every
 * request through a connection passes, telling the `Connection` entity what upstreams answer.
 */
import { Layer } from "effect"
import { CoolDownReports } from "./CoolDownReports.ts"
import { RequestLimiter } from "./RequestLimiter.ts"
import { RuleCache } from "./RuleCache.ts"

/** `RequestLimiter` and `RuleCache`; needs the repositories, the rate-limit store, the cluster (`Sharding`) and the config. */
export const layerNoDeps = RequestLimiter.layerNoDeps.pipe(
  Layer.provideMerge(RuleCache.layerNoDeps),
  Layer.provide(CoolDownReports.layer)
)
