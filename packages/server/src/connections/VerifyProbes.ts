/**
 * The verify probes of interactive setup (probe `verify: true`): each runs once through the
 * connection with its new credentials; all must succeed before the connection becomes
 * `configured`. A failure is 409 `verification_failed` naming each failed probe and why, never a
 * credential.
 */
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Conflict } from "@svc/domain/Errors"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Context, Effect, Layer } from "effect"
import { Probes } from "./Probes.ts"

/** Runs a connection's verify probes. */
export class VerifyProbes extends Context.Service<
  VerifyProbes,
  { readonly run: (row: ConnectionRow, definition: ConnectorDefinition) => Effect.Effect<void, Conflict> }
>()("@svc/server/VerifyProbes") {
  static readonly layerNoDeps: Layer.Layer<VerifyProbes, never, Probes> = Layer.effect(
    VerifyProbes,
    Effect.gen(function* () {
      const probes = yield* Probes
      return VerifyProbes.of({
        run: Effect.fn("VerifyProbes.run")(function* (row: ConnectionRow, definition: ConnectorDefinition) {
          const verify = (definition.probes ?? []).filter((probe) => probe.verify)
          // A verify probe held back by a rate limit cannot vouch for the credentials: it fails.
          const results = yield* Effect.forEach(
            verify,
            (probe) => Effect.map(probes.run(row, definition, probe), (run) => run.result),
            { concurrency: 4 }
          )
          const failed = results.filter((result) => result.outcome !== "success")
          if (failed.length === 0) return
          return yield* new Conflict({
            error: `the connection did not pass verification (${failed.map((r) => r.probeId).join(", ")})`,
            code: "verification_failed",
            details: failed.map((result) => ({
              field: `probes.${result.probeId}`,
              message:
                result.error ?? (result.statusCode === undefined ? "failed" : `answered HTTP ${result.statusCode}`)
            }))
          })
        })
      })
    })
  )
}
