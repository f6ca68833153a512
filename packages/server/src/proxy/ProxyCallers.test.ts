/**
 * The callers the warm door recognises (issue 16): remembered per service and exact header, never
 * a token with a nonce or without the proxy permission, never past the token's expiry plus the
 * verifier's leeway, and dropped when their actor is invalidated in this process.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { Effect, Layer, Option } from "effect"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { ProxyCallers } from "./ProxyCallers.ts"

const listeners: Array<(externalId: string) => void> = []
const Directory = Layer.succeed(ActorDirectory)({
  findByExternalId: () => Effect.succeed(Option.none()),
  invalidate: () => Effect.void,
  onInvalidate: (listener) => {
    listeners.push(listener)
  }
})

const jwt = (payload: Record<string, unknown>) =>
  `Bearer ${Buffer.from('{"alg":"HS256"}').toString("base64url")}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.sig`

const actorOf = (externalId: string, expiresAt?: number): AuthenticatedActor => ({
  id: `act_${externalId}`,
  externalId,
  namespace: "root",
  name: externalId,
  labels: {},
  annotations: {},
  permissions: [{ namespace: "root", resources: ["connections"], verbs: ["proxy"] }],
  restrictions: undefined,
  service: "api",
  expiresAt
})

const run = <A>(f: (callers: ProxyCallers["Service"]) => A) =>
  Effect.map(ProxyCallers, f).pipe(Effect.provide(ProxyCallers.layerNoDeps.pipe(Layer.provide(Directory))))

describe("ProxyCallers", () => {
  it.effect("remembers the exact header per service", () =>
    run((callers) => {
      const header = jwt({ sub: "alice" })
      const alice = actorOf("alice")
      callers.remember("api", header, alice)
      assert.strictEqual(callers.lookup("api", header), alice)
      assert.isUndefined(callers.lookup("admin-api", header))
      assert.isUndefined(callers.lookup("api", `${header} `))
    })
  )

  it.effect("never remembers a nonce token, an unreadable one or one without connections:proxy", () =>
    run((callers) => {
      const nonce = jwt({ sub: "alice", nonce: "n1", exp: Math.floor(Date.now() / 1000) + 60 })
      callers.remember("api", nonce, actorOf("alice"))
      assert.isUndefined(callers.lookup("api", nonce))
      callers.remember("api", "Bearer opaque", actorOf("alice"))
      assert.isUndefined(callers.lookup("api", "Bearer opaque"))
      const header = jwt({ sub: "bob" })
      callers.remember("api", header, { ...actorOf("bob"), permissions: [] })
      assert.isUndefined(callers.lookup("api", header))
    })
  )

  it.effect("an expired token (past exp plus the 60 s leeway) is not recognised", () =>
    run((callers) => {
      const header = jwt({ sub: "alice" })
      callers.remember("api", header, actorOf("alice", Math.floor(Date.now() / 1000) - 61))
      assert.isUndefined(callers.lookup("api", header))
      const fresh = jwt({ sub: "alice", x: 1 })
      callers.remember("api", fresh, actorOf("alice", Math.floor(Date.now() / 1000) + 3600))
      assert.isDefined(callers.lookup("api", fresh))
    })
  )

  it.effect("an actor invalidated in this process is forgotten at once", () =>
    run((callers) => {
      const alice = jwt({ sub: "alice" })
      const bob = jwt({ sub: "bob" })
      callers.remember("api", alice, actorOf("alice"))
      callers.remember("api", bob, actorOf("bob"))
      for (const listener of listeners) listener("alice")
      assert.isUndefined(callers.lookup("api", alice))
      assert.isDefined(callers.lookup("api", bob))
    })
  )
})
