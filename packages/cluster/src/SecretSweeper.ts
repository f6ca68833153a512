/**
 * The secret re-encryption the worker runs (SECURITY.md "Encryption at rest"). Declared here so
 * the cluster package does not depend on the server, which provides it.
 */
import { Context, type Effect } from "effect"

/** One sweep over every stored secret; succeeds with the number of rows re-sealed. */
export class SecretSweeper extends Context.Service<SecretSweeper, { readonly sweep: Effect.Effect<number> }>()(
  "@svc/cluster/SecretSweeper"
) {}
