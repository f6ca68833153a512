/**
 * Connection and connector ids in request paths. The route decoders take any text (a malformed id
 * names no resource, so it answers 404 like an unknown one, not 400); the handlers narrow it here to
 * the branded id the services take.
 */
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { NotFound } from "@svc/domain/Errors"
import { type ConnectionId, type ConnectorId, isConnectionId, isConnectorId } from "@svc/domain/Ids"
import { Effect } from "effect"
import { withActor } from "./WithActor.ts"

const notFound = (noun: string, id: string) => new NotFound({ error: `${noun} ${id} not found`, code: "not_found" })

/** The connection id of a path, or the 404 of an unknown connection. */
export const connectionIdParam = (id: string): Effect.Effect<ConnectionId, NotFound> =>
  isConnectionId(id) ? Effect.succeed(id) : Effect.fail(notFound("connection", id))

/** The connector id of a path, or the 404 of an unknown connector. */
export const connectorIdParam = (id: string): Effect.Effect<ConnectorId, NotFound> =>
  isConnectorId(id) ? Effect.succeed(id) : Effect.fail(notFound("connector", id))

/** `withActor` for a route on one connection. */
export const withConnection = <A, E, R>(
  id: string,
  f: (actor: AuthenticatedActor, id: ConnectionId) => Effect.Effect<A, E, R>
) => withActor((actor) => Effect.flatMap(connectionIdParam(id), (connectionId) => f(actor, connectionId)))

/** `withActor` for a route on one connector. */
export const withConnector = <A, E, R>(
  id: string,
  f: (actor: AuthenticatedActor, id: ConnectorId) => Effect.Effect<A, E, R>
) => withActor((actor) => Effect.flatMap(connectorIdParam(id), (connectorId) => f(actor, connectorId)))
