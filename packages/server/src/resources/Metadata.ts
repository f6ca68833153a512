/**
 * Label and annotation sub-resources of every resource type (spec 4.1, 2.3): reads return user
 * and system labels; writes touch user labels only and re-materialise system labels in the same
 * write.
 */
import { BadRequest, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { isSystemKey, keyProblem, labelValueProblem } from "@svc/domain/Labels"
import type { ResourceType } from "@svc/domain/Resource"
import type { ActorResourceRow } from "@svc/sql/Rows"
import { Context, Effect, Layer } from "effect"
import { Actors } from "./Actors.ts"
import * as Kinds from "./ResourceKinds.ts"
import type { EnvelopeRow } from "./ResourceKinds.ts"
import { type Guard, type ResourceError, ResourceOps } from "./ResourceOps.ts"

type Which = "labels" | "annotations"

const invalid = (field: string, message: string) =>
  new BadRequest({ error: message, code: "invalid_request", details: [{ field, message }] })

const validateKey = (key: string) => {
  const problem = keyProblem(key)
  return problem === undefined ? Effect.void : Effect.fail(invalid("path.key", problem))
}

/** The `GET/PUT/DELETE …/{labels|annotations}[/{key}]` operations. */
export class Metadata extends Context.Service<
  Metadata,
  {
    readonly all: (
      actor: AuthenticatedActor,
      type: ResourceType,
      which: Which,
      id: string
    ) => Effect.Effect<Readonly<Record<string, string>>, ResourceError>
    readonly one: (
      actor: AuthenticatedActor,
      type: ResourceType,
      which: Which,
      id: string,
      key: string
    ) => Effect.Effect<{ key: string; value: string }, ResourceError>
    readonly put: (
      actor: AuthenticatedActor,
      type: ResourceType,
      which: Which,
      id: string,
      key: string,
      value: string
    ) => Effect.Effect<{ key: string; value: string }, ResourceError>
    readonly remove: (
      actor: AuthenticatedActor,
      type: ResourceType,
      which: Which,
      id: string,
      key: string
    ) => Effect.Effect<void, ResourceError>
  }
>()("@svc/server/Metadata") {
  static readonly layerNoDeps: Layer.Layer<Metadata, never, ResourceOps | Actors> = Layer.effect(
    Metadata,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const actors = yield* Actors
      const guardOf = (type: ResourceType): Guard<EnvelopeRow> | undefined =>
        type === "actors" ? (row) => actors.guard(row as ActorResourceRow) : undefined
      const absent = (which: Which, key: string) =>
        new NotFound({ error: `no ${which === "labels" ? "label" : "annotation"} ${key}`, code: "not_found" })

      const all = (actor: AuthenticatedActor, type: ResourceType, which: Which, id: string) =>
        Effect.map(ops.load(actor, Kinds.byType[type], id, "get"), (row) => row[which])

      const one = (actor: AuthenticatedActor, type: ResourceType, which: Which, id: string, key: string) =>
        Effect.flatMap(all(actor, type, which, id), (map) =>
          Object.hasOwn(map, key) ? Effect.succeed({ key, value: map[key]! }) : Effect.fail(absent(which, key))
        )

      const put = Effect.fn("Metadata.put")(function* (
        actor: AuthenticatedActor,
        type: ResourceType,
        which: Which,
        id: string,
        key: string,
        value: string
      ) {
        yield* validateKey(key)
        if (which === "labels") {
          const problem = labelValueProblem(value)
          if (problem !== undefined) return yield* invalid("body.value", problem)
        }
        yield* ops.update(
          actor,
          Kinds.byType[type],
          id,
          which === "labels" ? { setLabel: [key, value] } : { setAnnotation: [key, value] },
          guardOf(type)
        )
        return { key, value }
      })

      const remove = Effect.fn("Metadata.remove")(function* (
        actor: AuthenticatedActor,
        type: ResourceType,
        which: Which,
        id: string,
        key: string
      ) {
        if (isSystemKey(key)) return yield* invalid("path.key", "the svc/ prefix is reserved for system labels")
        const current = yield* all(actor, type, which, id)
        if (!Object.hasOwn(current, key)) return yield* absent(which, key)
        yield* ops.update(
          actor,
          Kinds.byType[type],
          id,
          which === "labels" ? { unsetLabel: key } : { unsetAnnotation: key },
          guardOf(type)
        )
      })

      return Metadata.of({ all, one, put, remove })
    })
  )
}
