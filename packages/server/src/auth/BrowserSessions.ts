/**
 * Browser sessions of the public service (spec 5.1, 5.9; API-CONVENTIONS "Authentication"): an
 * opaque session id carried in an HttpOnly cookie plus an XSRF token the front end echoes on
 * non-GET requests. Sessions live in the shared counter store under the SHA-256 of their id, so
 * the store never holds a cookie value, and expire with the store's TTL.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { Permission } from "@svc/domain/Auth"
import { ServiceUnavailable } from "@svc/domain/Errors"
import { CounterStore, type StoreUnavailable } from "../stores/CounterStore.ts"

/** Random bytes in a session id and in an XSRF token (base64url, 43 characters). */
export const sessionTokenBytes = 32

const tokenPattern = /^[A-Za-z0-9_-]{43}$/

const sha256Hex = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

/** The counter-store key of a session: only the SHA-256 of its id is stored. */
export const sessionKey = (sessionId: string): string => `session:${sha256Hex(sessionId)}`

const StoredSession = Schema.Struct({
  actorId: Schema.String,
  externalId: Schema.String,
  restrictions: Schema.optionalKey(Schema.Array(Permission)),
  xsrfHash: Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/)),
  expiresAt: Schema.Finite
})
const StoredSessionJson = Schema.fromJsonString(StoredSession)
const encodeStored = Schema.encodeSync(StoredSessionJson)
const decodeStored = Schema.decodeUnknownOption(StoredSessionJson)

/** A live session as read from the store; `expiresAt` is epoch milliseconds. */
export interface BrowserSession {
  readonly actorId: string
  readonly externalId: string
  /** The login token's restrictions (spec 5.5); absent means the actor's own permissions. */
  readonly restrictions: ReadonlyArray<Permission> | undefined
  /** SHA-256 (hex) of the session's XSRF token; compare with {@link xsrfTokenMatches}. */
  readonly xsrfHash: string
  readonly expiresAt: number
}

/** What `create` needs: the actor, the login token's restrictions and the lifetime. */
export interface NewBrowserSession {
  readonly actorId: string
  readonly externalId: string
  readonly restrictions?: ReadonlyArray<Permission> | undefined
  readonly ttlMs: number
}

/** A new session: the cookie value, the XSRF token and the expiry (epoch milliseconds). Secrets: never log. */
export interface CreatedBrowserSession {
  readonly sessionId: string
  readonly xsrfToken: string
  readonly expiresAt: number
}

/**
 * True when `token` is the session's XSRF token: the SHA-256 of the candidate is compared with
 * the stored hash in constant time. A missing or oversized candidate never matches.
 */
export const xsrfTokenMatches = (session: BrowserSession, token: string | undefined): boolean => {
  if (token === undefined || token.length === 0 || token.length > 256) return false
  const expected = Buffer.from(session.xsrfHash, "hex")
  const actual = createHash("sha256").update(token, "utf8").digest()
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}

const unavailable = (error: StoreUnavailable) =>
  Effect.logWarning("session store unavailable", error.operation).pipe(
    Effect.andThen(
      Effect.fail(
        new ServiceUnavailable({ error: "the session store is unavailable", code: "session_store_unavailable" })
      )
    )
  )

const newToken = Effect.sync(() => randomBytes(sessionTokenBytes).toString("base64url"))

/**
 * Server-side browser sessions over the shared counter store: ids and XSRF tokens are 32 random
 * bytes; an unknown, expired, malformed or revoked session reads as none; a store outage is a
 * 503 `session_store_unavailable` (fail closed).
 */
export class BrowserSessions extends Context.Service<
  BrowserSessions,
  {
    create(session: NewBrowserSession): Effect.Effect<CreatedBrowserSession, ServiceUnavailable>
    get(sessionId: string): Effect.Effect<Option.Option<BrowserSession>, ServiceUnavailable>
    /** Ends the session; true if a live one was removed. */
    revoke(sessionId: string): Effect.Effect<boolean, ServiceUnavailable>
  }
>()("@svc/server/auth/BrowserSessions") {
  /** Sessions over whichever CounterStore is provided; expiry follows `Clock`. */
  static readonly layerNoDeps: Layer.Layer<BrowserSessions, never, CounterStore> = Layer.effect(
    BrowserSessions,
    Effect.gen(function* () {
      const store = yield* CounterStore

      const create = Effect.fn("BrowserSessions.create")(function* (input: NewBrowserSession) {
        if (!Number.isFinite(input.ttlMs) || input.ttlMs < 1) {
          return yield* Effect.die(new RangeError("a browser session TTL must be a positive number of milliseconds"))
        }
        const sessionId = yield* newToken
        const xsrfToken = yield* newToken
        const expiresAt = (yield* Clock.currentTimeMillis) + input.ttlMs
        const value = encodeStored({
          actorId: input.actorId,
          externalId: input.externalId,
          ...(input.restrictions === undefined ? {} : { restrictions: input.restrictions }),
          xsrfHash: sha256Hex(xsrfToken),
          expiresAt
        })
        const stored = yield* store
          .setIfAbsent(sessionKey(sessionId), value, input.ttlMs)
          .pipe(Effect.catchTag("StoreUnavailable", unavailable))
        // 256 random bits: a collision means the random source is broken.
        if (!stored) return yield* Effect.die(new Error("browser session id collision"))
        const created: CreatedBrowserSession = { sessionId, xsrfToken, expiresAt }
        return created
      })

      const get = Effect.fnUntraced(function* (sessionId: string) {
        if (!tokenPattern.test(sessionId)) return Option.none<BrowserSession>()
        const raw = yield* store.get(sessionKey(sessionId)).pipe(Effect.catchTag("StoreUnavailable", unavailable))
        if (Option.isNone(raw)) return Option.none<BrowserSession>()
        const decoded = decodeStored(raw.value)
        if (Option.isNone(decoded)) return Option.none<BrowserSession>()
        const now = yield* Clock.currentTimeMillis
        if (decoded.value.expiresAt <= now) return Option.none<BrowserSession>()
        const { restrictions, ...rest } = decoded.value
        return Option.some<BrowserSession>({ ...rest, restrictions })
      })

      const revoke = Effect.fn("BrowserSessions.revoke")(function* (sessionId: string) {
        if (!tokenPattern.test(sessionId)) return false
        return yield* store.delete(sessionKey(sessionId)).pipe(Effect.catchTag("StoreUnavailable", unavailable))
      })

      return BrowserSessions.of({ create, get, revoke })
    })
  )

  /** Sessions over an in-memory CounterStore (embedded default, unit tests). */
  static readonly layerMemory: Layer.Layer<BrowserSessions> = BrowserSessions.layerNoDeps.pipe(
    Layer.provide(CounterStore.layerMemory)
  )
}
