/**
 * Background re-encryption (SECURITY.md "Encryption at rest"): after a rotation, and once at
 * worker start, every live connection whose secrets are sealed under another data key version
 * than its namespace's current one is re-sealed, and plaintext an earlier release stored is
 * sealed and cleared. Each row is written with compare-and-swap: a concurrent write (a token
 * refresh) wins and is never undone; the lost row is skipped (that write sealed it afresh).
 * Webhook endpoints' signing secrets are re-sealed the same way (a rotation of the secret wins).
 */
import { DataKeyRepo, type SecretRow } from "@svc/sql/DataKeyRepo"
import { WebhookRepo } from "@svc/sql/WebhookRepo"
import { Context, Effect, Layer } from "effect"
import * as Envelope from "./Envelope.ts"
import { type CipherContext, type DecryptionFailed, Encryption, type KeyRef } from "./Encryption.ts"

/** What one row's rewrite did. */
export type RewriteOutcome = "current" | "rewritten" | "lost" | "failed"

/** Counts of one sweep. */
export interface SweepResult {
  readonly rewritten: number
  /** Rows a concurrent write changed between read and rewrite. */
  readonly skipped: number
  /** Rows whose ciphertext did not decrypt (logged, left as they are). */
  readonly failed: number
}

const batchSize = 200

const sameKey = (a: KeyRef | undefined, b: KeyRef) => a !== undefined && a.keyId === b.keyId && a.version === b.version

/** Re-seals stale secret columns. */
export class Reencryption extends Context.Service<
  Reencryption,
  {
    /** One pass over every live connection, in id order. */
    readonly sweep: Effect.Effect<SweepResult>
    /** Re-seals one row as read (`row`); `lost` when the stored row no longer equals it. */
    readonly rewrite: (row: SecretRow) => Effect.Effect<RewriteOutcome>
  }
>()("@svc/server/Reencryption") {
  static readonly layerNoDeps: Layer.Layer<Reencryption, never, Encryption | DataKeyRepo | WebhookRepo> = Layer.effect(
    Reencryption,
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const repo = yield* DataKeyRepo
      const webhooks = yield* WebhookRepo

      const context = (row: SecretRow, column: "configuration" | "credentials"): CipherContext => ({
        table: "connections",
        column,
        rowId: row.id,
        namespace: row.namespace
      })

      /** The column's ciphertext under `current`: unchanged when it already is. */
      const reseal = (row: SecretRow, column: "configuration" | "credentials", sealed: string, current: KeyRef) =>
        sameKey(Envelope.headerOf(sealed), current)
          ? Effect.succeed(sealed)
          : Effect.flatMap(encryption.decrypt(context(row, column), sealed), (value) =>
              encryption.encrypt(context(row, column), value)
            )

      const rewrite = Effect.fn("Reencryption.rewrite")(function* (row: SecretRow) {
        const current = yield* encryption.currentKey(row.namespace)
        const next = yield* Effect.all({
          configurationEnc:
            row.configurationEnc !== null
              ? reseal(row, "configuration", row.configurationEnc, current)
              : row.legacyConfiguration !== null
                ? encryption.encrypt(context(row, "configuration"), row.legacyConfiguration)
                : Effect.succeed(null),
          credentialsEnc:
            row.credentialsEnc === null ? Effect.succeed(null) : reseal(row, "credentials", row.credentialsEnc, current)
        }).pipe(
          Effect.catchTag("DecryptionFailed", (error: DecryptionFailed) =>
            Effect.as(Effect.logWarning(`re-encryption skipped a row: ${error.message}`), undefined)
          )
        )
        if (next === undefined) return "failed" as const
        const unchanged =
          next.configurationEnc === row.configurationEnc &&
          next.credentialsEnc === row.credentialsEnc &&
          row.legacyConfiguration === null
        if (unchanged) return "current" as const
        return (yield* Effect.orDie(repo.swapSecrets(row, next))) ? ("rewritten" as const) : ("lost" as const)
      })

      const sweep = Effect.gen(function* () {
        // Another process may have rotated: resolve every namespace afresh.
        encryption.invalidate()
        const counts = { rewritten: 0, skipped: 0, failed: 0 }
        let after: string | undefined
        while (true) {
          const rows = yield* Effect.orDie(repo.secretsPage(after, batchSize))
          for (const row of rows) {
            const outcome = yield* rewrite(row)
            if (outcome === "rewritten") counts.rewritten++
            else if (outcome === "lost") counts.skipped++
            else if (outcome === "failed") counts.failed++
          }
          if (rows.length < batchSize) break
          after = rows[rows.length - 1]?.id
        }
        // Webhook signing secrets (docs/webhooks.md), sealed like credentials.
        let afterHook: string | undefined
        while (true) {
          const rows = yield* Effect.orDie(webhooks.secretsPage(afterHook, batchSize))
          for (const row of rows) {
            const hookContext: CipherContext = {
              table: "webhooks",
              column: "secret",
              rowId: row.id,
              namespace: row.namespace
            }
            const current = yield* encryption.currentKey(row.namespace)
            if (sameKey(Envelope.headerOf(row.secretEnc), current)) continue
            const next = yield* encryption.decrypt(hookContext, row.secretEnc).pipe(
              Effect.flatMap((value) => encryption.encrypt(hookContext, value)),
              Effect.catchTag("DecryptionFailed", (error: DecryptionFailed) =>
                Effect.as(Effect.logWarning(`re-encryption skipped a webhook secret: ${error.message}`), undefined)
              )
            )
            if (next === undefined) counts.failed++
            else if (yield* Effect.orDie(webhooks.swapSecret(row.id, row.secretEnc, next))) counts.rewritten++
            else counts.skipped++
          }
          if (rows.length < batchSize) break
          afterHook = rows[rows.length - 1]?.id
        }
        yield* Effect.logInfo(
          `re-encryption sweep rewrote ${counts.rewritten} connection(s) and webhook secret(s), skipped ${counts.skipped} changed concurrently, ${counts.failed} undecryptable`
        )
        return counts
      }).pipe(Effect.withSpan("Reencryption.sweep"))

      return Reencryption.of({ sweep, rewrite })
    })
  )
}
