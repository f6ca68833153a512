/**
 * Actors in the main database: configured actors (spec 5 rule 6, `system_auth.actors`) synced at
 * start, lookups by id and by external id (the JWT `sub`).
 */
import * as PgTypes from "@effect/sql-pg/PgTypes"
import { Permission } from "@svc/domain/Auth"
import { ActorId, makeId } from "@svc/domain/Ids"
import { Context, DateTime, Effect, Layer, type Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** Label or annotation map. */
const StringMap = Schema.Record(Schema.String, Schema.String)

/** Where an actor comes from: the configuration file or the API. */
export const ActorSource = Schema.Literals(["config", "api"])
export type ActorSource = typeof ActorSource.Type

/** A row of `actors`; timestamps decode from the driver's `Date` to `DateTime.Utc`. */
export const ActorRow = Schema.Struct({
  id: ActorId,
  externalId: Schema.String,
  namespace: Schema.String,
  name: Schema.String,
  labels: StringMap,
  annotations: StringMap,
  permissions: Schema.Array(Permission),
  source: ActorSource,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate,
  deletedAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type ActorRow = typeof ActorRow.Type

/** An actor as configured in `system_auth.actors`. */
export const ConfiguredActor = Schema.Struct({
  externalId: Schema.String,
  namespace: Schema.String,
  name: Schema.optionalKey(Schema.String),
  labels: Schema.optionalKey(StringMap),
  annotations: Schema.optionalKey(StringMap),
  permissions: Schema.Array(Permission)
})
export type ConfiguredActor = typeof ConfiguredActor.Type

/**
 * Actor storage. Reads return live (not soft-deleted) actors only. `SqlError` stays in the
 * error channel for the caller to decide; decoding failures of stored rows are defects.
 */
export class ActorRepo extends Context.Service<
  ActorRepo,
  {
    /**
     * Upserts the configured actors by external id: ids stay stable across restarts, changed
     * fields are written and stamp `updatedAt`, unchanged actors are not touched; live actors of
     * source `config` that are no longer configured are soft-deleted. Returns the live rows.
     */
    readonly syncConfigured: (
      actors: ReadonlyArray<ConfiguredActor>
    ) => Effect.Effect<ReadonlyArray<ActorRow>, SqlError>
    readonly findByExternalId: (externalId: string) => Effect.Effect<Option.Option<ActorRow>, SqlError>
    readonly findById: (id: ActorId) => Effect.Effect<Option.Option<ActorRow>, SqlError>
  }
>()("@svc/sql/ActorRepo") {
  /** Requires a `SqlClient` with the default name transforms and a migrated main schema. */
  static readonly layer: Layer.Layer<ActorRepo, never, SqlClient.SqlClient> = Layer.effect(
    ActorRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const findLiveByExternalIds = SqlSchema.findAll({
        Request: Schema.Array(Schema.String),
        Result: ActorRow,
        execute: (externalIds) =>
          sql`SELECT * FROM actors WHERE deleted_at IS NULL AND external_id IN ${sql.in(externalIds)} ORDER BY external_id`
      })
      const findOneByExternalId = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: ActorRow,
        execute: (externalId) => sql`SELECT * FROM actors WHERE deleted_at IS NULL AND external_id = ${externalId}`
      })
      const findOneById = SqlSchema.findOneOption({
        Request: ActorId,
        Result: ActorRow,
        execute: (id) => sql`SELECT * FROM actors WHERE deleted_at IS NULL AND id = ${id}`
      })

      // Configuration owns the user labels; system labels (spec 2.3) are kept and refreshed later.
      const userLabels = sql`(SELECT COALESCE(jsonb_object_agg(key, value), '{}'::jsonb)
        FROM jsonb_each(actors.labels) WHERE key NOT LIKE 'svc/%')`
      const systemLabels = sql`(SELECT COALESCE(jsonb_object_agg(key, value), '{}'::jsonb)
        FROM jsonb_each(actors.labels) WHERE key LIKE 'svc/%')`

      const upsert = (actor: ConfiguredActor, now: Date, id = makeId("act")) =>
        sql`
          INSERT INTO actors ${sql.insert({
            id,
            externalId: actor.externalId,
            namespace: actor.namespace,
            name: actor.name ?? id,
            labels: PgTypes.jsonb(actor.labels ?? {}),
            annotations: PgTypes.jsonb(actor.annotations ?? {}),
            permissions: PgTypes.jsonb(actor.permissions),
            source: "config",
            createdAt: now,
            updatedAt: now
          })}
          ON CONFLICT (external_id) WHERE deleted_at IS NULL DO UPDATE SET
            namespace = EXCLUDED.namespace,
            name = ${actor.name === undefined ? sql`actors.name` : sql`EXCLUDED.name`},
            labels = EXCLUDED.labels || ${systemLabels},
            annotations = EXCLUDED.annotations,
            permissions = EXCLUDED.permissions,
            source = EXCLUDED.source,
            updated_at = EXCLUDED.updated_at
          WHERE (actors.namespace, actors.name, ${userLabels}, actors.annotations, actors.permissions, actors.source)
            IS DISTINCT FROM
            (EXCLUDED.namespace, ${actor.name === undefined ? sql`actors.name` : sql`EXCLUDED.name`}, EXCLUDED.labels, EXCLUDED.annotations, EXCLUDED.permissions, EXCLUDED.source)`

      const retireUnconfigured = (externalIds: ReadonlyArray<string>, now: Date) =>
        externalIds.length === 0
          ? sql`UPDATE actors SET deleted_at = ${now}, updated_at = ${now} WHERE deleted_at IS NULL AND source = 'config'`
          : sql`UPDATE actors SET deleted_at = ${now}, updated_at = ${now}
              WHERE deleted_at IS NULL AND source = 'config' AND external_id NOT IN ${sql.in(externalIds)}`

      const syncConfigured = Effect.fn("ActorRepo.syncConfigured")(function* (actors: ReadonlyArray<ConfiguredActor>) {
        const now = DateTime.toDateUtc(yield* DateTime.now)
        const externalIds = actors.map((actor) => actor.externalId)
        return yield* Effect.gen(function* () {
          // Retire first so a name freed by a removed actor can be taken by a configured one.
          yield* retireUnconfigured(externalIds, now)
          for (const actor of actors) yield* upsert(actor, now)
          return externalIds.length === 0
            ? []
            : yield* findLiveByExternalIds(externalIds).pipe(Effect.catchTag("SchemaError", Effect.die))
        }).pipe(sql.withTransaction)
      })

      const findByExternalId = Effect.fn("ActorRepo.findByExternalId")((externalId: string) =>
        findOneByExternalId(externalId).pipe(Effect.catchTag("SchemaError", Effect.die))
      )
      const findById = Effect.fn("ActorRepo.findById")((id: ActorId) =>
        findOneById(id).pipe(Effect.catchTag("SchemaError", Effect.die))
      )

      return ActorRepo.of({ syncConfigured, findByExternalId, findById })
    })
  )
}
