/**
 * The encrypted columns of a connection (SECURITY.md "Encryption at rest"): configuration and
 * credentials are sealed with the data key of the connection's namespace, bound to the row, and
 * opened only in memory. A ciphertext that does not open is a defect (tampering, a copied value,
 * a wrong root key): logged without any material and answered with a bare 500.
 */
import { type StoredCredentials, StoredCredentials as StoredCredentialsSchema } from "@svc/domain/ConnectorAuth"
import { Context, Effect, Layer, Schema } from "effect"
import { Encryption } from "../crypto/Encryption.ts"

/** The identity a sealed value is bound to. */
export interface ConnectionIdentity {
  readonly id: string
  readonly namespace: string
}

/** The sealed columns of a connection row. */
export interface SealedColumns extends ConnectionIdentity {
  readonly configurationEnc: string | null
  readonly credentialsEnc: string | null
  readonly legacyConfiguration: Readonly<Record<string, unknown>> | null
}

const decodeCredentials = Schema.decodeUnknownEffect(StoredCredentialsSchema)
const decodeConfiguration = Schema.decodeUnknownEffect(Schema.Record(Schema.String, Schema.Unknown))

/** Decoding failures of decrypted values would quote them: replace the cause with a safe message. */
const safely = <A, E>(effect: Effect.Effect<A, E>, what: string, row: ConnectionIdentity) =>
  Effect.orDie(Effect.mapError(effect, () => new Error(`the stored ${what} of connection ${row.id} do not decode`)))

const context = (row: ConnectionIdentity, column: "configuration" | "credentials") => ({
  table: "connections",
  column,
  rowId: row.id,
  namespace: row.namespace
})

/** Sealing and opening of connection secrets. */
export class ConnectionSecrets extends Context.Service<
  ConnectionSecrets,
  {
    readonly sealConfiguration: (
      row: ConnectionIdentity,
      configuration: Readonly<Record<string, unknown>>
    ) => Effect.Effect<string>
    readonly sealCredentials: (row: ConnectionIdentity, credentials: StoredCredentials) => Effect.Effect<string>
    /** The plaintext configuration (`{}` when none was stored). */
    readonly configuration: (row: SealedColumns) => Effect.Effect<Record<string, unknown>>
    /** The credentials, or undefined for a connection without any (auth `none`). */
    readonly credentials: (row: SealedColumns) => Effect.Effect<StoredCredentials | undefined>
  }
>()("@svc/server/ConnectionSecrets") {
  static readonly layerNoDeps: Layer.Layer<ConnectionSecrets, never, Encryption> = Layer.effect(
    ConnectionSecrets,
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const open = (row: ConnectionIdentity, column: "configuration" | "credentials", sealed: string) =>
        encryption
          .decrypt(context(row, column), sealed)
          .pipe(
            Effect.orDie,
            Effect.withSpan("ConnectionSecrets.open", { attributes: { column, connectionId: row.id } })
          )
      return ConnectionSecrets.of({
        sealConfiguration: (row, configuration) => encryption.encrypt(context(row, "configuration"), configuration),
        sealCredentials: (row, credentials) => encryption.encrypt(context(row, "credentials"), credentials),
        configuration: (row) => {
          if (row.configurationEnc !== null) {
            return Effect.flatMap(open(row, "configuration", row.configurationEnc), (value) =>
              safely(decodeConfiguration(value), "configuration", row)
            )
          }
          return Effect.succeed({ ...(row.legacyConfiguration ?? {}) })
        },
        credentials: (row) =>
          row.credentialsEnc === null
            ? Effect.succeed(undefined)
            : Effect.flatMap(open(row, "credentials", row.credentialsEnc), (value) =>
                safely(decodeCredentials(value), "credentials", row)
              )
      })
    })
  )
}
