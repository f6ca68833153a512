/**
 * The operations every resource type shares (spec 2.2–2.4, 5.8): permission checks with 404 for
 * what the caller may not see, creation and updates that materialise labels in the same write,
 * name conflicts as 409, soft deletes, and the queueing of carry-forward propagation.
 */
import { BadRequest, Conflict, Forbidden, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import {
  annotationsMaxBytes,
  annotationsSize,
  type LabelParent,
  materializeLabels,
  ownSystemLabels,
  sameLabels,
  userLabelsOf
} from "@svc/domain/Labels"
import { isAllowed } from "@svc/domain/PermissionMatcher"
import { parentNamespace } from "@svc/domain/Resource"
import type { NamespaceRow } from "@svc/sql/Rows"
import { jsonb, ResourceRepo } from "@svc/sql/ResourceRepo"
import type { NameTaken } from "@svc/sql/ResourceSql"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { ConnectionChanges } from "./ConnectionChanges.ts"
import * as Kinds from "./ResourceKinds.ts"
import type { EnvelopeRow, Kind, KindInfo } from "./ResourceKinds.ts"

/** Errors a resource operation answers with (storage failures are defects). */
export type ResourceError = BadRequest | Forbidden | NotFound | Conflict

/** What a create writes besides the envelope. */
export interface CreateInput {
  readonly id: string
  readonly namespace: string
  readonly name: string | undefined
  readonly labels: Readonly<Record<string, string>> | undefined
  readonly annotations: Readonly<Record<string, string>> | undefined
  /** Type-specific columns (JSON values wrapped with `jsonb`). */
  readonly columns: Readonly<Record<string, unknown>>
  /** Runs in the same transaction right after the insert. */
  readonly afterInsert?: Effect.Effect<void, SqlError> | undefined
}

/** A change to the envelope of one resource; omitted parts stay. */
export interface EnvelopeChange {
  readonly name?: string | undefined
  /** Replaces the user labels (system labels are recomputed). */
  readonly labels?: Readonly<Record<string, string>> | undefined
  readonly setLabel?: readonly [key: string, value: string] | undefined
  readonly unsetLabel?: string | undefined
  readonly annotations?: Readonly<Record<string, string>> | undefined
  readonly setAnnotation?: readonly [key: string, value: string] | undefined
  readonly unsetAnnotation?: string | undefined
  readonly columns?: Readonly<Record<string, unknown>> | undefined
}

/** A check on the current row inside the write transaction (e.g. read-only resources). */
export type Guard<Row> = (row: Row) => Effect.Effect<void, ResourceError>

/** Storage failures are defects (a bare 500); domain errors stay typed. */
export const orDie = <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError>, R> =>
  Effect.catchIf<A, E | SqlError, R, SqlError, never, never, never>(effect, isSqlError, Effect.die)

const notFound = (kind: KindInfo, id: string) =>
  new NotFound({ error: `${kind.noun} ${id} not found`, code: "not_found" })

/** Generic resource operations over `ResourceRepo`. */
export class ResourceOps extends Context.Service<
  ResourceOps,
  {
    readonly allowed: (
      actor: AuthenticatedActor,
      kind: KindInfo,
      verb: string,
      namespace: string,
      id?: string
    ) => boolean
    /** 403 unless the caller may `verb` in `namespace` (for creates). */
    readonly authorizeCreate: (
      actor: AuthenticatedActor,
      kind: KindInfo,
      namespace: string
    ) => Effect.Effect<void, Forbidden>
    /** A live resource the caller may `verb`; 404 when absent or invisible, 403 when only visible. */
    readonly load: <Row extends EnvelopeRow>(
      actor: AuthenticatedActor,
      kind: Kind<Row>,
      id: string,
      verb: string
    ) => Effect.Effect<Row, NotFound | Forbidden>
    /** The live row of a resource, no permission check (for parents and re-reads). */
    readonly find: <Row extends EnvelopeRow>(kind: Kind<Row>, id: string) => Effect.Effect<Option.Option<Row>>
    readonly create: <Row extends EnvelopeRow>(
      actor: AuthenticatedActor,
      kind: Kind<Row>,
      input: CreateInput
    ) => Effect.Effect<Row, ResourceError>
    readonly update: <Row extends EnvelopeRow>(
      actor: AuthenticatedActor,
      kind: Kind<Row>,
      id: string,
      change: EnvelopeChange,
      guard?: Guard<Row>
    ) => Effect.Effect<Row, ResourceError>
    readonly remove: <Row extends EnvelopeRow>(
      actor: AuthenticatedActor,
      kind: Kind<Row>,
      id: string,
      check?: Guard<Row>
    ) => Effect.Effect<Row, ResourceError>
  }
>()("@svc/server/ResourceOps") {
  static readonly layerNoDeps: Layer.Layer<ResourceOps, never, ResourceRepo> = Layer.effect(
    ResourceOps,
    Effect.gen(function* () {
      const repo = yield* ResourceRepo
      // Optional: processes without the proxy's caches have nothing to invalidate.
      const changes = yield* Effect.serviceOption(ConnectionChanges)
      // Every process's caches have dropped the row before the write answers.
      const written = (kind: KindInfo, id: string) =>
        kind.type === "connections" && Option.isSome(changes) ? changes.value.written([id]) : Effect.void

      const allowed = (actor: AuthenticatedActor, kind: KindInfo, verb: string, namespace: string, id?: string) =>
        isAllowed({
          actor,
          restrictions: actor.restrictions,
          request: { namespace, resource: kind.permission, verb, resourceId: id }
        })

      const authorizeCreate = (actor: AuthenticatedActor, kind: KindInfo, namespace: string) =>
        allowed(actor, kind, "create", namespace)
          ? Effect.void
          : Effect.fail(
              new Forbidden({
                error: `permission ${kind.permission}:create is required in ${namespace}`,
                code: "forbidden"
              })
            )

      // spec 5, SECURITY: a resource the caller cannot see answers 404, one it can see but not change 403.
      const authorize = (actor: AuthenticatedActor, kind: KindInfo, verb: string, namespace: string, id: string) => {
        if (allowed(actor, kind, verb, namespace, id)) return Effect.void
        const visible = allowed(actor, kind, "get", namespace, id) || allowed(actor, kind, "list", namespace, id)
        return Effect.fail(
          visible
            ? new Forbidden({ error: `permission ${kind.permission}:${verb} is required`, code: "forbidden" })
            : notFound(kind, id)
        )
      }

      const find = <Row extends EnvelopeRow>(kind: Kind<Row>, id: string, forUpdate = false) =>
        orDie(repo.findLive(kind.table, id, kind.row, { forUpdate })) as Effect.Effect<Option.Option<Row>>

      const load = <Row extends EnvelopeRow>(actor: AuthenticatedActor, kind: Kind<Row>, id: string, verb: string) =>
        Effect.flatMap(find(kind, id), (row) =>
          Option.isNone(row)
            ? Effect.fail(notFound(kind, id))
            : Effect.as(authorize(actor, kind, verb, row.value.namespace, id), row.value)
        )

      const namespaceLabels = (path: string) =>
        Effect.map(
          find(Kinds.namespaces, path),
          Option.map((row: NamespaceRow) => row.labels)
        )

      /** The carry-forward parents of a resource (spec 2.4 table), nearest last. */
      const parentsOf = (
        kind: KindInfo,
        row: { readonly namespace: string; readonly connectorId?: string; readonly path?: string }
      ): Effect.Effect<ReadonlyArray<LabelParent>, BadRequest> =>
        Effect.gen(function* () {
          const parents: Array<LabelParent> = []
          if (kind.type === "connections" && row.connectorId !== undefined) {
            const connector = yield* find(Kinds.connectors, row.connectorId)
            if (Option.isSome(connector)) parents.push({ rt: "cxr", labels: connector.value.labels })
          }
          const nsPath = kind.type === "namespaces" ? parentNamespace(row.namespace) : row.namespace
          if (nsPath !== undefined) {
            const labels = yield* namespaceLabels(nsPath)
            if (Option.isNone(labels)) {
              return yield* new BadRequest({ error: `namespace ${nsPath} does not exist`, code: "namespace_not_found" })
            }
            parents.push({ rt: "ns", labels: labels.value })
          }
          return parents
        })

      const conflict = (kind: KindInfo, name: string, namespace: string) => (taken: NameTaken) =>
        Effect.fail(
          taken.constraint.includes("external_id")
            ? new Conflict({ error: "an actor with this externalId already exists", code: "external_id_conflict" })
            : new Conflict({
                error: `a ${kind.noun} named "${name}" already exists in ${namespace}`,
                code: "name_conflict"
              })
        )

      const checkAnnotations = (annotations: Readonly<Record<string, string>>) =>
        annotationsSize(annotations) > annotationsMaxBytes
          ? Effect.fail(
              new BadRequest({
                error: `annotations are limited to ${annotationsMaxBytes} bytes per resource`,
                code: "annotations_too_large"
              })
            )
          : Effect.void

      const nowDate = Effect.map(DateTime.now, (now) => new Date(DateTime.toEpochMillis(now)))

      const create = <Row extends EnvelopeRow>(actor: AuthenticatedActor, kind: Kind<Row>, input: CreateInput) =>
        Effect.gen(function* () {
          const k: KindInfo = kind
          yield* authorizeCreate(actor, k, input.namespace)
          const name = input.name ?? input.id
          const annotations = input.annotations ?? {}
          yield* checkAnnotations(annotations)
          const now = yield* nowDate
          yield* orDie(
            repo.withTransaction(
              Effect.gen(function* () {
                const parents = yield* parentsOf(k, { ...input.columns, namespace: input.namespace })
                const labels = materializeLabels({
                  rt: kind.rt,
                  id: input.id,
                  name: kind.type === "namespaces" ? input.id.slice(input.id.lastIndexOf(".") + 1) : name,
                  namespace: input.namespace,
                  userLabels: userLabelsOf(input.labels ?? {}),
                  parents,
                  system: ownSystemLabels(kind.rt, input.columns as { type?: string })
                })
                yield* repo
                  .insert(kind.table, {
                    ...(kind.type === "namespaces" ? { path: input.id } : { id: input.id }),
                    namespace: input.namespace,
                    name: kind.type === "namespaces" ? input.id.slice(input.id.lastIndexOf(".") + 1) : name,
                    labels: jsonb(labels),
                    annotations: jsonb(annotations),
                    createdAt: now,
                    updatedAt: now,
                    ...input.columns
                  })
                  .pipe(Effect.catchTag("NameTaken", conflict(k, name, input.namespace)))
                if (input.afterInsert !== undefined) yield* input.afterInsert
              })
            )
          )
          const row = yield* find(kind, input.id)
          if (Option.isNone(row)) return yield* Effect.die(new Error(`${kind.noun} vanished after create`))
          return row.value
        }).pipe(Effect.withSpan("ResourceOps.create", { attributes: { type: kind.type } }))

      /** Inside a write transaction: the live row locked, the caller allowed to `verb` it, the guard passed. */
      const lock = <Row extends EnvelopeRow>(
        actor: AuthenticatedActor,
        kind: Kind<Row>,
        id: string,
        verb: string,
        guard: Guard<Row> | undefined
      ) =>
        Effect.gen(function* () {
          const current = yield* find(kind, id, true)
          if (Option.isNone(current)) return yield* notFound(kind, id)
          yield* authorize(actor, kind, verb, current.value.namespace, id)
          if (guard !== undefined) yield* guard(current.value)
          return current.value
        })

      const update = <Row extends EnvelopeRow>(
        actor: AuthenticatedActor,
        kind: Kind<Row>,
        id: string,
        change: EnvelopeChange,
        guard?: Guard<Row>
      ) =>
        Effect.gen(function* () {
          const k: KindInfo = kind
          const now = yield* nowDate
          const updated = yield* orDie(
            repo.withTransaction(
              Effect.gen(function* () {
                const row = yield* lock(actor, kind, id, "update", guard)
                let user = { ...userLabelsOf(change.labels ?? row.labels) }
                if (change.setLabel !== undefined) user[change.setLabel[0]] = change.setLabel[1]
                if (change.unsetLabel !== undefined) {
                  const { [change.unsetLabel]: _, ...rest } = user
                  user = rest
                }
                let annotations = { ...(change.annotations ?? row.annotations) }
                if (change.setAnnotation !== undefined) annotations[change.setAnnotation[0]] = change.setAnnotation[1]
                if (change.unsetAnnotation !== undefined) {
                  const { [change.unsetAnnotation]: _, ...rest } = annotations
                  annotations = rest
                }
                yield* checkAnnotations(annotations)
                const name = kind.type === "namespaces" ? row.name : (change.name ?? row.name)
                const parents = yield* parentsOf(k, row as EnvelopeRow & { connectorId?: string })
                const labels = materializeLabels({
                  rt: kind.rt,
                  id,
                  name,
                  namespace: row.namespace,
                  userLabels: user,
                  parents,
                  system: ownSystemLabels(kind.rt, row as { type?: string })
                })
                yield* repo
                  .update(kind.table, id, {
                    name,
                    labels: jsonb(labels),
                    annotations: jsonb(annotations),
                    updatedAt: now,
                    ...change.columns
                  })
                  .pipe(Effect.catchTag("NameTaken", conflict(k, name, row.namespace)))
                // spec 2.4 rules 3–4: descendants are rewritten by the background propagation.
                if (kind.propagates !== undefined && !sameLabels(labels, row.labels)) {
                  yield* repo.enqueuePropagation(kind.propagates, id, now)
                }
                return yield* find(kind, id)
              })
            )
          )
          yield* written(k, id)
          if (Option.isNone(updated)) return yield* notFound(k, id)
          return updated.value
        }).pipe(Effect.withSpan("ResourceOps.update", { attributes: { type: kind.type } }))

      const remove = <Row extends EnvelopeRow>(
        actor: AuthenticatedActor,
        kind: Kind<Row>,
        id: string,
        check?: Guard<Row>
      ) =>
        Effect.gen(function* () {
          const now = yield* nowDate
          const removed = yield* orDie(
            repo.withTransaction(
              Effect.gen(function* () {
                const row = yield* lock(actor, kind, id, "delete", check)
                yield* repo.softDelete(kind.table, id, now)
                return row
              })
            )
          )
          yield* written(kind, id)
          return removed
        }).pipe(Effect.withSpan("ResourceOps.remove", { attributes: { type: kind.type } }))

      return ResourceOps.of({
        allowed,
        authorizeCreate,
        load,
        find: (kind, id) => find(kind, id),
        create,
        update,
        remove
      })
    })
  )
}
