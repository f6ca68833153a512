import { Context, Effect } from "effect"
import { randomUUID } from "node:crypto"

/** Source of `jti` values: a random UUID v4 per token unless a test replaces it. */
export const TokenId = Context.Reference<{ readonly next: Effect.Effect<string> }>("@svc/cli/TokenId", {
  defaultValue: () => ({ next: Effect.sync(() => randomUUID()) })
})
