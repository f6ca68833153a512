/**
 * Reading request events (spec 4.7, API-CONVENTIONS "Lists" and "Request events"): the list,
 * filtered in SQL to the namespaces where the caller may `request-events:list`, newest first,
 * with opaque cursors that carry the filters of the first call; and one event, answered 404
 * when it is unknown or outside what the caller may `request-events:get` (spec 5.8, SECURITY).
 */
import { accessFilter } from "@svc/domain/AccessFilter"
import { BadRequest, NotFound, ServiceUnavailable } from "@svc/domain/Errors"
import type { Recording } from "@svc/domain/Recording"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { isAllowed } from "@svc/domain/PermissionMatcher"
import {
  parseIsoTimestamp,
  parseRequestEventFilter,
  type RequestEvent,
  type RequestEventFilterName,
  type RequestEventList,
  requestEventFilterNames
} from "@svc/domain/RequestEvent"
import { decodeCursor, defaultPageSize, encodeCursor, maxPageSize } from "@svc/domain/Resource"
import { RequestEventRepo } from "@svc/sql/RequestEventRepo"
import { ResourceSnapshotRepo } from "@svc/sql/ResourceSnapshotRepo"
import { Context, Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import { AppMetricsSql } from "../stores/Database.ts"
import { Recordings } from "./Recordings.ts"

/** One list call: the filters as query texts by query name, plus `limit` and `cursor`. */
export type RequestEventListRequest = { readonly [K in RequestEventFilterName]?: string | undefined } & {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

const resource = "request-events"
const order = { field: "timestamp", direction: "DESC" } as const
const invalidCursor = (error = "the cursor is not valid for this list") =>
  new BadRequest({ error, code: "invalid_cursor" })
const notFound = (id: string) => new NotFound({ error: `request event ${id} not found`, code: "not_found" })

const givenFilters = (request: RequestEventListRequest): Record<string, string> => {
  const filters: Record<string, string> = {}
  for (const name of requestEventFilterNames) {
    const value = request[name]
    if (value !== undefined) filters[name] = value
  }
  return filters
}

const sameFilters = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean => {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key])
}

/** The request-event repository over the app-metrics client (spec 8.2), for the server graph. */
export const requestEventRepoLayer: Layer.Layer<RequestEventRepo, never, AppMetricsSql> = RequestEventRepo.layer.pipe(
  Layer.provide(Layer.effect(SqlClient.SqlClient, AppMetricsSql))
)

/** Resource snapshots in the app-metrics database. */
export const resourceSnapshotRepoLayer: Layer.Layer<ResourceSnapshotRepo, never, AppMetricsSql> =
  ResourceSnapshotRepo.layer.pipe(Layer.provide(Layer.effect(SqlClient.SqlClient, AppMetricsSql)))

/** Request-event reads for the HTTP handlers. */
export class RequestEvents extends Context.Service<
  RequestEvents,
  {
    /** 400 for an invalid filter (details name the query field) or a cursor of another list or other filters. */
    readonly list: (
      actor: AuthenticatedActor,
      request: RequestEventListRequest
    ) => Effect.Effect<RequestEventList, BadRequest>
    /** 404 when unknown or when the caller may not `request-events:get` in the event's namespace. */
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<RequestEvent, NotFound>
    /**
     * The decrypted recording of an event (redactions kept, truncation flagged): 404 like `get`,
     * and 404 `recording_not_found` when the event has none; 503 when the blob storage fails.
     */
    readonly recording: (
      actor: AuthenticatedActor,
      id: string
    ) => Effect.Effect<Recording, NotFound | ServiceUnavailable>
  }
>()("@svc/server/RequestEvents") {
  static readonly layerNoDeps: Layer.Layer<RequestEvents, never, RequestEventRepo> = Layer.effect(
    RequestEvents,
    Effect.gen(function* () {
      const repo = yield* RequestEventRepo
      // Present in every process that serves the API (reading needs no recording to be on now).
      const recordings = yield* Effect.serviceOption(Recordings)

      const list = Effect.fn("RequestEvents.list")(function* (
        actor: AuthenticatedActor,
        request: RequestEventListRequest
      ) {
        const limit = request.limit ?? defaultPageSize
        if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
          return yield* new BadRequest({
            error: "invalid request query",
            code: "invalid_request",
            details: [{ field: "query.limit", message: `limit is an integer from 1 to ${maxPageSize}` }]
          })
        }
        const given = givenFilters(request)
        let filters = given
        let after: { readonly timestamp: string; readonly id: string } | undefined
        if (request.cursor !== undefined) {
          const state = decodeCursor(request.cursor)
          const position = state?.after.value
          if (
            state === undefined ||
            state.order.field !== order.field ||
            state.order.direction !== order.direction ||
            position === undefined ||
            position === null ||
            parseIsoTimestamp(position) === undefined
          ) {
            return yield* invalidCursor()
          }
          // The cursor carries the filters; a call may repeat them but not change them.
          if (Object.keys(given).length > 0 && !sameFilters(given, state.filters)) {
            return yield* invalidCursor("the cursor was issued for other filters")
          }
          filters = state.filters
          after = { timestamp: position, id: state.after.id }
        }
        const parsed = parseRequestEventFilter(filters)
        if (Result.isFailure(parsed)) {
          if (request.cursor !== undefined) return yield* invalidCursor()
          return yield* new BadRequest({
            error: "invalid request query",
            code: "invalid_request",
            details: parsed.failure.map((problem) => ({ field: `query.${problem.field}`, message: problem.message }))
          })
        }
        const page = yield* Effect.orDie(
          repo.list({ ...parsed.success, access: accessFilter(actor, resource, "list"), after, limit })
        )
        const last = page.rows[page.rows.length - 1]
        if (!page.more || last === undefined) return { items: page.rows }
        const cursor = encodeCursor({ filters, order, after: { value: last.timestamp, id: last.id } })
        return { items: page.rows, cursor }
      })

      const get = Effect.fn("RequestEvents.get")(function* (actor: AuthenticatedActor, id: string) {
        const found = yield* Effect.orDie(repo.get(id))
        // spec 5.8, SECURITY: an event the caller may not read answers like an unknown one.
        if (
          Option.isNone(found) ||
          !isAllowed({
            actor,
            restrictions: actor.restrictions,
            request: { namespace: found.value.namespace, resource, verb: "get", resourceId: id }
          })
        ) {
          return yield* notFound(id)
        }
        return found.value
      })

      const recording = Effect.fn("RequestEvents.recording")(function* (actor: AuthenticatedActor, id: string) {
        const event = yield* get(actor, id)
        const none = new NotFound({ error: `request event ${id} has no recording`, code: "recording_not_found" })
        if (!event.full_request_recorded || Option.isNone(recordings)) return yield* none
        const found = yield* recordings.value.read(id, event.namespace).pipe(
          Effect.catchTag("BlobStorageError", (error) =>
            Effect.andThen(
              Effect.logWarning(`recording of request event ${id} could not be read: ${error.message}`),
              Effect.fail(
                new ServiceUnavailable({ error: "the recording storage is unavailable", code: "store_unavailable" })
              )
            )
          ),
          // A recording sealed under a key this process cannot open is a fault, never shown.
          Effect.catchTag("DecryptionFailed", (error) => Effect.die(error))
        )
        if (Option.isNone(found)) return yield* none
        return found.value
      })

      return RequestEvents.of({ list, get, recording })
    })
  )
}
