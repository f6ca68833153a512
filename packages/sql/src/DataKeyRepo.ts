/**
 * Envelope-encryption storage (SECURITY.md "Encryption at rest"): wrapped data keys, one row per
 * (key id, version); the nearest key resource of a namespace; the re-encryption outbox written
 * with each rotation; and the secret columns of connections read in pages and rewritten with
 * compare-and-swap so a concurrent write is never undone.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"

/** `data_keys.key_id` of the service-wide default data key. */
export const rootDataKeyId = "root"

/** One stored data key version, wrapped by the root key `rootKeyId`. */
export const DataKeyRow = Schema.Struct({
  keyId: Schema.String,
  version: Schema.Number,
  wrapped: Schema.String,
  rootKeyId: Schema.String,
  createdAt: Schema.Date
})
export type DataKeyRow = typeof DataKeyRow.Type

/** The nearest live key resource of a namespace and its highest version (null: none stored yet). */
export const NearestKey = Schema.Struct({ keyId: Schema.String, version: Schema.NullOr(Schema.Number) })
export type NearestKey = typeof NearestKey.Type

/** The secret columns of one live connection. */
export const SecretRow = Schema.Struct({
  id: Schema.String,
  namespace: Schema.String,
  configurationEnc: Schema.NullOr(Schema.String),
  credentialsEnc: Schema.NullOr(Schema.String),
  legacyConfiguration: Schema.NullOr(Schema.Unknown)
})
export type SecretRow = typeof SecretRow.Type

/** New ciphertexts for a connection's secret columns. */
export interface SecretSwap {
  readonly configurationEnc: string | null
  readonly credentialsEnc: string | null
}

/** A queued re-encryption. */
export interface ReencryptionTask {
  readonly id: string
  readonly keyId: string
}

/** `root.a.b` → `[root.a.b, root.a, root]`: the namespace and its ancestors, nearest first. */
export const ancestorsOf = (namespace: string): ReadonlyArray<string> => {
  const parts = namespace.split(".")
  return parts.map((_, i) => parts.slice(0, parts.length - i).join("."))
}

const VersionRow = Schema.Struct({ keyId: Schema.String, version: Schema.Number })
const RootKeyIdRow = Schema.Struct({ rootKeyId: Schema.String })
const TaskRow = Schema.Struct({ id: Schema.String, keyId: Schema.String })

// Our own rows failing to decode is a defect, never a typed error.
const dieOnSchema = <A, R>(effect: Effect.Effect<A, SqlError | Schema.SchemaError, R>): Effect.Effect<A, SqlError, R> =>
  effect.pipe(Effect.catchTag("SchemaError", (error) => Effect.die(error)))

/** Storage of wrapped data keys, the re-encryption outbox and connection secret columns. */
export class DataKeyRepo extends Context.Service<
  DataKeyRepo,
  {
    /** Inserts one version unless it exists; true when this call inserted it. */
    readonly insert: (row: DataKeyRow) => Effect.Effect<boolean, SqlError>
    readonly find: (keyId: string, version: number) => Effect.Effect<Option.Option<DataKeyRow>, SqlError>
    readonly latestVersion: (keyId: string) => Effect.Effect<Option.Option<number>, SqlError>
    /** Highest version per key id (ids without data keys are absent). */
    readonly latestVersions: (keyIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, number>, SqlError>
    /** Locks version 1 of a key until the transaction ends (serialises rotations); false when absent. */
    readonly lockFirst: (keyId: string) => Effect.Effect<boolean, SqlError>
    /** The distinct root key ids that wrapped the stored data keys. */
    readonly rootKeyIds: Effect.Effect<ReadonlyArray<string>, SqlError>
    /** The key resource of the namespace or its nearest ancestor; newest created wins within one namespace. */
    readonly nearestKey: (namespace: string) => Effect.Effect<Option.Option<NearestKey>, SqlError>
    readonly enqueueReencryption: (keyId: string, now: Date) => Effect.Effect<void, SqlError>
    /** Queued re-encryptions in order, only those enqueued at or before `enqueuedBefore` when given. */
    readonly pendingReencryptions: (
      limit: number,
      enqueuedBefore?: Date
    ) => Effect.Effect<ReadonlyArray<ReencryptionTask>, SqlError>
    /** Removes the queued re-encryptions up to and including `upToId`. */
    readonly completeReencryptions: (upToId: string) => Effect.Effect<void, SqlError>
    /** Live connections with id greater than `afterId`, by id. */
    readonly secretsPage: (
      afterId: string | undefined,
      limit: number
    ) => Effect.Effect<ReadonlyArray<SecretRow>, SqlError>
    /**
     * Writes new ciphertexts and clears the legacy plaintext only if the row still holds exactly
     * `current`'s values; false when a concurrent write won (nothing is changed then).
     */
    readonly swapSecrets: (current: SecretRow, next: SecretSwap) => Effect.Effect<boolean, SqlError>
  }
>()("@svc/sql/DataKeyRepo") {
  static readonly layer: Layer.Layer<DataKeyRepo, never, SqlClient.SqlClient> = Layer.effect(
    DataKeyRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const insert = Effect.fn("DataKeyRepo.insert")(function* (row: DataKeyRow) {
        const rows = yield* sql`INSERT INTO data_keys ${sql.insert({ ...row })}
          ON CONFLICT (key_id, version) DO NOTHING RETURNING 1 AS inserted`
        return rows.length > 0
      })

      const findRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ keyId: Schema.String, version: Schema.Number }),
        Result: DataKeyRow,
        execute: ({ keyId, version }) =>
          sql`SELECT key_id, version, wrapped, root_key_id, created_at FROM data_keys
            WHERE key_id = ${keyId} AND version = ${version}`
      })
      const find = (keyId: string, version: number) =>
        dieOnSchema(findRow({ keyId, version })).pipe(Effect.withSpan("DataKeyRepo.find"))

      const latestRows = SqlSchema.findAll({
        Request: Schema.Array(Schema.String),
        Result: VersionRow,
        execute: (keyIds) =>
          sql`SELECT key_id, MAX(version) AS version FROM data_keys WHERE key_id IN ${sql.in(keyIds)} GROUP BY key_id`
      })
      const latestVersions = (keyIds: ReadonlyArray<string>) =>
        keyIds.length === 0
          ? Effect.succeed(new Map<string, number>())
          : dieOnSchema(latestRows(keyIds)).pipe(
              Effect.map((rows) => new Map(rows.map((row) => [row.keyId, row.version]))),
              Effect.withSpan("DataKeyRepo.latestVersions")
            )
      const latestVersion = (keyId: string) =>
        Effect.map(latestVersions([keyId]), (versions) => Option.fromNullishOr(versions.get(keyId)))

      const lockFirst = Effect.fn("DataKeyRepo.lockFirst")(function* (keyId: string) {
        const rows = yield* sql`SELECT 1 AS locked FROM data_keys WHERE key_id = ${keyId} AND version = 1 FOR UPDATE`
        return rows.length > 0
      })

      const rootKeyIds = dieOnSchema(
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: RootKeyIdRow,
          execute: () => sql`SELECT DISTINCT root_key_id FROM data_keys ORDER BY root_key_id`
        })(undefined)
      ).pipe(
        Effect.map((rows) => rows.map((row) => row.rootKeyId)),
        Effect.withSpan("DataKeyRepo.rootKeyIds")
      )

      const nearestRow = SqlSchema.findOneOption({
        Request: Schema.Array(Schema.String),
        Result: NearestKey,
        execute: (namespaces) =>
          sql`SELECT k.id AS key_id, (SELECT MAX(d.version) FROM data_keys d WHERE d.key_id = k.id) AS version
            FROM keys k WHERE k.deleted_at IS NULL AND k.namespace IN ${sql.in(namespaces)}
            ORDER BY length(k.namespace) DESC, k.created_at DESC, k.id DESC LIMIT 1`
      })
      const nearestKey = (namespace: string) =>
        dieOnSchema(nearestRow(ancestorsOf(namespace))).pipe(Effect.withSpan("DataKeyRepo.nearestKey"))

      const enqueueReencryption = (keyId: string, now: Date) =>
        sql`INSERT INTO reencryptions ${sql.insert({ keyId, enqueuedAt: now })}`.pipe(
          Effect.asVoid,
          Effect.withSpan("DataKeyRepo.enqueueReencryption")
        )

      const pendingRows = SqlSchema.findAll({
        Request: Schema.Struct({ limit: Schema.Number, before: Schema.NullOr(Schema.Date) }),
        Result: TaskRow,
        execute: ({ limit, before }) =>
          sql`SELECT id::text AS id, key_id FROM reencryptions
            ${before === null ? sql`` : sql`WHERE enqueued_at <= ${before}`} ORDER BY id LIMIT ${limit}`
      })
      const pendingReencryptions = (limit: number, enqueuedBefore?: Date) =>
        dieOnSchema(pendingRows({ limit, before: enqueuedBefore ?? null })).pipe(
          Effect.withSpan("DataKeyRepo.pendingReencryptions")
        )

      const completeReencryptions = (upToId: string) =>
        sql`DELETE FROM reencryptions WHERE id <= CAST(${upToId} AS bigint)`.pipe(
          Effect.asVoid,
          Effect.withSpan("DataKeyRepo.completeReencryptions")
        )

      const pageRows = SqlSchema.findAll({
        Request: Schema.Struct({ afterId: Schema.NullOr(Schema.String), limit: Schema.Number }),
        Result: SecretRow,
        execute: ({ afterId, limit }) =>
          sql`SELECT id, namespace, configuration_enc, credentials_enc, legacy_configuration FROM connections
            WHERE deleted_at IS NULL ${afterId === null ? sql`` : sql`AND id > ${afterId}`}
            ORDER BY id LIMIT ${limit}`
      })
      const secretsPage = (afterId: string | undefined, limit: number) =>
        dieOnSchema(pageRows({ afterId: afterId ?? null, limit })).pipe(Effect.withSpan("DataKeyRepo.secretsPage"))

      const same = (column: string, value: string | null) =>
        value === null ? sql`${sql(column)} IS NULL` : sql`${sql(column)} = ${value}`

      const swapSecrets = Effect.fn("DataKeyRepo.swapSecrets")(function* (current: SecretRow, next: SecretSwap) {
        const legacy =
          current.legacyConfiguration === null
            ? sql`legacy_configuration IS NULL`
            : sql`legacy_configuration = ${jsonb(current.legacyConfiguration)}`
        const rows = yield* sql`UPDATE connections
          SET configuration_enc = ${next.configurationEnc}, credentials_enc = ${next.credentialsEnc},
            legacy_configuration = NULL
          WHERE id = ${current.id} AND deleted_at IS NULL
            AND ${same("configuration_enc", current.configurationEnc)}
            AND ${same("credentials_enc", current.credentialsEnc)} AND ${legacy}
          RETURNING 1 AS swapped`
        return rows.length > 0
      })

      return DataKeyRepo.of({
        insert,
        find,
        latestVersion,
        latestVersions,
        lockFirst,
        rootKeyIds,
        nearestKey,
        enqueueReencryption,
        pendingReencryptions,
        completeReencryptions,
        secretsPage,
        swapSecrets
      })
    })
  )
}
