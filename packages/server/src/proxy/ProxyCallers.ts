/**
 * The callers the proxy's warm door recognises without running the bearer middleware (issue 16;
 * docs/performance.md): the exact `Authorization` header of a proxy request the HttpApi route
 * authenticated, with the actor it resolved to, for the service it arrived on.
 *
 * An entry lives at most `callerTtl` (the actor directory keeps records 30 s, the connection
 * targets 5 s) and never past the token's own expiry (with the verifier's leeway); an actor
 * invalidated in this process (an actor write) drops its entries at once. A token with a nonce is
 * never remembered: each of its uses must reach the verifier, which refuses the replay.
 */
import { clockToleranceSeconds, maxTokenLength } from "../auth/TokenVerifier.ts"
import type { ServiceId } from "@svc/domain/Auth"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { hasAnyGrant } from "@svc/domain/PermissionMatcher"
import { Context, Effect, Layer } from "effect"
import { ActorDirectory } from "../resources/ActorDirectory.ts"

/** How long a remembered caller is recognised before its token goes through the middleware again. */
export const callerTtlMs = 5_000

/** Callers remembered at most (the oldest remembered is forgotten first). */
const capacity = 2048

interface Entry {
  readonly actor: AuthenticatedActor
  readonly until: number
}

/** True when the JWT in `authorization` carries a `nonce` claim (or cannot be read: then it is not remembered either). */
const hasNonce = (authorization: string): boolean => {
  const token = authorization.slice(authorization.indexOf(" ") + 1).trim()
  const parts = token.split(".")
  if (parts.length !== 3) return true
  try {
    const payload: unknown = JSON.parse(Buffer.from(parts[1] as string, "base64url").toString("utf8"))
    return typeof payload !== "object" || payload === null || "nonce" in payload
  } catch {
    return true
  }
}

export class ProxyCallers extends Context.Service<
  ProxyCallers,
  {
    /** Remembers that `authorization` authenticated as `actor` on `service` for a proxy endpoint. */
    readonly remember: (service: ServiceId, authorization: string, actor: AuthenticatedActor) => void
    /** The actor of `authorization` on `service` if remembered and still valid; undefined otherwise. */
    readonly lookup: (service: ServiceId, authorization: string) => AuthenticatedActor | undefined
  }
>()("@svc/server/ProxyCallers") {
  static readonly layerNoDeps: Layer.Layer<ProxyCallers, never, ActorDirectory> = Layer.effect(
    ProxyCallers,
    Effect.gen(function* () {
      const directory = yield* ActorDirectory
      const entries = new Map<string, Entry>()
      const keyOf = (service: ServiceId, authorization: string) => `${service} ${authorization}`
      directory.onInvalidate((externalId) => {
        for (const [key, entry] of entries) if (entry.actor.externalId === externalId) entries.delete(key)
      })
      return ProxyCallers.of({
        remember: (service, authorization, actor) => {
          if (authorization.length > maxTokenLength || hasNonce(authorization)) return
          if (!hasAnyGrant(actor, "connections", "proxy")) return
          const now = Date.now()
          const expires =
            actor.expiresAt === undefined ? Number.POSITIVE_INFINITY : (actor.expiresAt + clockToleranceSeconds) * 1000
          const until = Math.min(now + callerTtlMs, expires)
          if (until <= now) return
          const key = keyOf(service, authorization)
          entries.delete(key)
          entries.set(key, { actor, until })
          if (entries.size > capacity) entries.delete(entries.keys().next().value as string)
        },
        lookup: (service, authorization) => {
          const key = keyOf(service, authorization)
          const entry = entries.get(key)
          if (entry === undefined) return undefined
          if (Date.now() < entry.until) return entry.actor
          entries.delete(key)
          return undefined
        }
      })
    })
  )
}
