/** The authenticated caller of the current request, for one-expression handlers. */
import { type AuthenticatedActor, CurrentActor } from "@svc/domain/http/Security"
import { Effect } from "effect"

/** Runs `f` with the authenticated caller of the request (provided by the authentication middleware). */
export const withActor = <A, E, R>(f: (actor: AuthenticatedActor) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(CurrentActor, f)
