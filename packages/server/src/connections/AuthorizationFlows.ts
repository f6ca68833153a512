/**
 * The short-lived records of an OAuth2 authorization in the counter store (Redis in production,
 * memory embedded), so any public-service process can continue a flow another one started:
 *
 * - a **ticket**: what `_initiate`/`_reauthorize` hand out inside the redirect URL; it names the
 *   connection, the actor and the return URL, and is exchanged once for a state;
 * - a **state**: the OAuth2 `state` sent to the provider, bound to the connection, actor, return
 *   URL, PKCE verifier and the browser that started the flow (a cookie only that browser holds).
 *
 * Both are single use (a claim deletes the record and succeeds only for the caller whose delete
 * removed it) and expire. Keys hold a SHA-256 of the value, never the value itself.
 */
import { ServiceUnavailable } from "@svc/domain/Errors"
import { ConnectionId } from "@svc/domain/Ids"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import { CounterStore } from "../stores/CounterStore.ts"

/** Why the browser is sent to the provider: first setup, or re-authentication of a configured connection. */
export const FlowPurpose = Schema.Literals(["setup", "reauth"])
export type FlowPurpose = typeof FlowPurpose.Type

/** What a ticket names. */
export const TicketRecord = Schema.Struct({
  connectionId: ConnectionId,
  actorId: Schema.String,
  purpose: FlowPurpose,
  returnToUrl: Schema.optionalKey(Schema.String)
})
export type TicketRecord = typeof TicketRecord.Type

/** What a state names. */
export const StateRecord = Schema.Struct({
  ...TicketRecord.fields,
  codeVerifier: Schema.String,
  /** SHA-256 (hex) of the browser-binding cookie value. */
  browserHash: Schema.String,
  redirectUri: Schema.String
})
export type StateRecord = typeof StateRecord.Type

/** SHA-256 hex of a value (store keys and browser binding). */
export const sha256 = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

const unavailable = new ServiceUnavailable({
  error: "the authorization store is unavailable; try again",
  code: "authorization_store_unavailable"
})

const ticketCodec = Schema.fromJsonString(TicketRecord)
const stateCodec = Schema.fromJsonString(StateRecord)

/** Ticket and state records of OAuth2 authorizations. */
export class AuthorizationFlows extends Context.Service<
  AuthorizationFlows,
  {
    readonly saveTicket: (
      ticket: string,
      record: TicketRecord,
      ttlMs: number
    ) => Effect.Effect<void, ServiceUnavailable>
    /** The ticket's record, removed; none when unknown, expired or already claimed. */
    readonly claimTicket: (ticket: string) => Effect.Effect<Option.Option<TicketRecord>, ServiceUnavailable>
    readonly saveState: (state: string, record: StateRecord, ttlMs: number) => Effect.Effect<void, ServiceUnavailable>
    /** The state's record, removed; none when unknown, expired or already claimed. */
    readonly claimState: (state: string) => Effect.Effect<Option.Option<StateRecord>, ServiceUnavailable>
  }
>()("@svc/server/AuthorizationFlows") {
  static readonly layerNoDeps: Layer.Layer<AuthorizationFlows, never, CounterStore> = Layer.effect(
    AuthorizationFlows,
    Effect.gen(function* () {
      const store = yield* CounterStore

      const save = (key: string, text: string, ttlMs: number) =>
        store.setIfAbsent(key, text, ttlMs).pipe(
          Effect.mapError(() => unavailable),
          Effect.flatMap((stored) =>
            // 256-bit random values do not collide; a taken key means a caller reused a value.
            stored ? Effect.void : Effect.die(new Error("authorization record key already in use"))
          )
        )

      const claim = <A>(key: string, decode: (text: string) => Effect.Effect<A, unknown>) =>
        Effect.gen(function* () {
          const found = yield* store.get(key)
          if (Option.isNone(found)) return Option.none<A>()
          // Only the caller whose delete removed the entry may use it: a replay loses the race.
          const removed = yield* store.delete(key)
          if (!removed) return Option.none<A>()
          return yield* decode(found.value).pipe(
            Effect.map(Option.some),
            Effect.catch(() => Effect.succeed(Option.none<A>()))
          )
        }).pipe(Effect.catchTag("StoreUnavailable", () => Effect.fail(unavailable)))

      return AuthorizationFlows.of({
        saveTicket: (ticket, record, ttlMs) =>
          save(`oauth2:ticket:${sha256(ticket)}`, Schema.encodeSync(ticketCodec)(record), ttlMs),
        claimTicket: (ticket) =>
          claim(`oauth2:ticket:${sha256(ticket)}`, (text) => Schema.decodeUnknownEffect(ticketCodec)(text)),
        saveState: (state, record, ttlMs) =>
          save(`oauth2:state:${sha256(state)}`, Schema.encodeSync(stateCodec)(record), ttlMs),
        claimState: (state) =>
          claim(`oauth2:state:${sha256(state)}`, (text) => Schema.decodeUnknownEffect(stateCodec)(text))
      })
    })
  )
}
