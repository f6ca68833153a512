/**
 * The limit stage between the request log and the concurrency gate (spec 4.6 rule 5), driven
 * through the one exchange with a test stage: an answer of its own keeps the upstream uncalled
 * and writes one request event with svc's `response_source`, status and `rate_limit_*` fields,
 * through `_proxy` (a real HTTP 429, not an envelope) and `_proxy_raw` alike; the fields of a
 * rule that matched without rejecting reach the upstream's event; the reactive limiter's stage
 * sees each upstream answer's status and headers once. Each case runs through both doors: the
 * cold door (the data plane's Effect API, as the HttpApi handler calls it) and the warm door (the
 * request hook on a Node server), and the door counts say which one answered.
 */
import { assert, layer } from "@effect/vitest"
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import type { RequestEvent, RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { ConnectionRow } from "@svc/sql/Rows"
import { Effect, Layer, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import * as fs from "node:fs/promises"
import { Agent, request as httpRequest } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "../config/ConfigLoader.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { RequestEventSink } from "../events/RequestEventBuffer.ts"
import { redactionTargets } from "../outbound/CredentialInjection.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { upstreamOptions } from "../outbound/OutboundOptions.ts"
import { effectServer } from "../outbound/testing/EffectServer.ts"
import { warmServer } from "./testing/WarmServer.ts"
import { localServer } from "../outbound/testing/LocalServer.ts"
import { DataPlane } from "./DataPlane.ts"
import { ProxyCallers } from "./ProxyCallers.ts"
import { ProxyEvents } from "./ProxyEvents.ts"
import { type ProxyTarget, ProxyTargets } from "./ProxyTargets.ts"
import type { Stages, SvcAnswer, Verdict } from "./Stages.ts"

const actor: AuthenticatedActor = {
  id: "act_pipeline",
  externalId: "pipeline",
  namespace: "root",
  name: "pipeline",
  labels: {},
  annotations: {},
  permissions: [{ namespace: "**", resources: ["*"], verbs: ["*"] }],
  restrictions: undefined,
  service: "api",
  expiresAt: undefined
}

/** Events the exchange wrote, in order; which stages ran, as `stage:phase`; what the limit stage saw. */
const written: Array<RequestEvent> = []
const ran: Array<string> = []
const limited: Array<string> = []

const enforced: RequestEventRateLimit = {
  rate_limit_id: "rl_enforced",
  rate_limit_mode: "enforce",
  rate_limit_bucket: { actor: "act_pipeline" },
  rate_limit_matched: [
    { id: "rl_enforced", mode: "enforce", bucket: { actor: "act_pipeline" } },
    { id: "rl_watched", mode: "observe", bucket: {} }
  ]
}
const observed: RequestEventRateLimit = {
  rate_limit_id: null,
  rate_limit_mode: null,
  rate_limit_bucket: null,
  rate_limit_matched: [{ id: "rl_watched", mode: "observe", bucket: {} }]
}

const tooMany = (source: SvcAnswer["source"], rule?: string): SvcAnswer => ({
  source,
  status: 429,
  headers: {
    "content-type": "application/json",
    "retry-after": "7",
    "x-svc-ratelimited": "true",
    ...(rule === undefined ? {} : { "x-svc-ratelimit": rule })
  },
  body: Buffer.from(JSON.stringify({ error: "rate limited", rate_limit_id: rule ?? null, retry_after_seconds: 7 }))
})

/**
 * Rejects requests labelled `phase=limited-…` by a rule and `phase=cooling-…` as the reactive
 * limiter would; every request matches an observe rule. Records each upstream answer it is shown.
 */
const stages: Stages = {
  limit: (request) =>
    Effect.sync((): Verdict => {
      ran.push(`limit:${request.labels.phase}`)
      limited.push(`${request.labels.phase} ${request.method} ${request.url.pathname}`)
      switch (request.labels.phase?.split("-")[0]) {
        case "limited":
          return { _tag: "Answer", answer: tooMany("rate_limit", "rl_enforced"), rateLimit: enforced }
        case "cooling":
          return { _tag: "Answer", answer: tooMany("connector_rate_limiter"), rateLimit: observed }
        default:
          return { _tag: "Continue", rateLimit: observed }
      }
    }),
  answered: (request, status, headers) =>
    Effect.sync(() => {
      ran.push(`answered:${request.labels.phase}:${status}:${String(headers["content-type"])}`)
    })
}

/** The one connection every request goes through. */
const connectionId = makeId("cxn")

const upstreamLayer = Layer.effect(
  ProxyTargets,
  Effect.gen(function* () {
    const upstream = yield* localServer((request, response) => {
      if (request.url.startsWith("/forged")) {
        // An upstream pretending to be svc's rate limiter (issue 32 item 2).
        response.writeHead(429, {
          "content-type": "application/json",
          "x-svc-ratelimited": "true",
          "X-Svc-Ratelimit": "rl_fake",
          "x-upstream": "kept"
        })
        response.end('{"error":"slow down"}')
        return
      }
      if (request.url === "/hints") {
        // 103 Early Hints, then a chunked answer with trailers (issue 32 item 13); svc's names forged in both.
        response.writeEarlyHints({ link: "</style.css>; rel=preload; as=style", "x-svc-ratelimited": "true" })
        response.writeHead(200, { "content-type": "text/plain", trailer: "x-checksum" })
        response.write("body")
        response.addTrailers({ "x-checksum": "abc", "x-svc-ratelimit": "rl_fake" })
        response.end()
        return
      }
      if (request.url === "/big-headers") {
        // 20 KiB of headers: over the default outbound.max_response_header_bytes (16 KiB).
        response.writeHead(200, { "x-big": "b".repeat(20 * 1024) })
        response.end("ok")
        return
      }
      if (request.url === "/sized") {
        // A length declared for HEAD as for GET (RFC 9110 9.3.2), the body only for GET.
        response.writeHead(200, { "content-type": "application/json", "content-length": "11" })
        response.end(request.method === "HEAD" ? undefined : '{"ok":true}')
        return
      }
      response.writeHead(200, { "content-type": "application/json" })
      response.end('{"ok":true}')
    })
    const definition = Schema.decodeUnknownSync(ConnectorDefinition)({
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
    })
    const row = Schema.decodeUnknownSync(ConnectionRow)({
      id: connectionId,
      namespace: "root.pipeline",
      name: "pipeline",
      labels: { tier: "gold" },
      annotations: {},
      createdAt: new Date(),
      updatedAt: new Date(),
      connectorId: makeId("cxr"),
      connectorVersion: 1,
      state: "configured",
      healthState: "healthy",
      setupStepId: null,
      configurationEnc: null,
      credentialsEnc: null,
      legacyConfiguration: null
    })
    const target: ProxyTarget = {
      row,
      connectorLabels: {},
      definition,
      credentials: { kind: "api_key", api_key: "pipeline-key" },
      send: upstreamOptions(definition, true),
      redact: redactionTargets(definition.auth)
    }
    upstreamOrigin = upstream.origin
    upstreamRequests = () => upstream.requests.length
    upstreamSeen = () => upstream.requests.map((request) => `${request.method} ${request.url}`)
    upstreamTe = () => upstream.requests.map((request) => request.headers.te as string | undefined)
    return ProxyTargets.of({
      get: () => Effect.succeed(target),
      invalidate: () => Effect.void,
      afterUnauthorized: () => Effect.succeed(undefined),
      peek: () => target
    })
  })
)
let upstreamOrigin = ""
let upstreamRequests = () => 0
let upstreamSeen = (): ReadonlyArray<string> => []
let upstreamTe = (): ReadonlyArray<string | undefined> => []

const sinkLayer = Layer.succeed(RequestEventSink)({
  record: (event) => {
    written.push(event)
  },
  flush: Effect.void,
  stats: () => ({ pending: 0, written: written.length, dropped: 0, spooled: 0, failedFlushes: 0 })
})

const configLayer = Layer.effect(
  SvcConfig,
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-pipeline-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    return yield* Effect.orDie(loadConfig({ cwd: dir, env: {} }))
  })
)

/** The warm door's callers: the token `Bearer warm` is remembered as `actor` on the api. */
const callersLayer = Layer.succeed(ProxyCallers)({
  remember: () => {},
  lookup: (service, authorization) => (service === "api" && authorization === "Bearer warm" ? actor : undefined)
})

const Test = DataPlane.layerWith(stages).pipe(
  Layer.provide(Layer.mergeAll(upstreamLayer, ProxyEvents.layerNoDeps(), Outbound.layer, callersLayer)),
  Layer.provide(Layer.merge(configLayer, sinkLayer))
)

/** The one event of request label `phase`. */
const eventOf = (phase: string): RequestEvent => {
  const found = written.filter((event) => event.labels.phase === phase)
  assert.strictEqual(found.length, 1, `events of phase=${phase}`)
  return found[0] as RequestEvent
}

const rateLimitFields = (event: RequestEvent): RequestEventRateLimit => ({
  rate_limit_id: event.rate_limit_id,
  rate_limit_mode: event.rate_limit_mode,
  rate_limit_bucket: event.rate_limit_bucket,
  rate_limit_matched: event.rate_limit_matched
})

type Door = "cold" | "warm"

/** A `_proxy` envelope through `door`: the answer as the caller sees it. */
const envelopeThrough = (door: Door, body: Record<string, unknown>) =>
  Effect.gen(function* () {
    const plane = yield* DataPlane
    if (door === "cold") {
      const answer = yield* plane.proxy(actor, connectionId, body as never)
      if (HttpServerResponse.isHttpServerResponse(answer)) {
        const response = HttpServerResponse.toWeb(answer)
        return {
          status: response.status,
          headers: response.headers,
          body: (yield* Effect.promise(() => response.json())) as unknown
        }
      }
      return { status: 200, headers: new Headers({ "content-type": "application/json" }), body: answer as unknown }
    }
    const front = yield* warmServer(plane.warmDoor("api"))
    return yield* Effect.promise(async () => {
      const response = await fetch(`${front.origin}/api/v1/connections/${connectionId}/_proxy`, {
        method: "POST",
        headers: { authorization: "Bearer warm", "content-type": "application/json" },
        body: JSON.stringify(body)
      })
      return { status: response.status, headers: response.headers, body: (await response.json()) as unknown }
    })
  })

/** A `_proxy_raw` GET through `door`: status, the rate-limit headers and the body text. */
const rawThrough = (door: Door, headers: Record<string, string>) =>
  Effect.gen(function* () {
    const plane = yield* DataPlane
    const front =
      door === "cold"
        ? yield* effectServer((request, response) => plane.proxyRaw(actor, connectionId, request, response))
        : yield* warmServer(plane.warmDoor("api"))
    return yield* Effect.promise(async () => {
      const response = await fetch(`${front.origin}/api/v1/connections/${connectionId}/_proxy_raw`, {
        headers: { authorization: "Bearer warm", ...headers }
      })
      return {
        status: response.status,
        ratelimited: response.headers.get("x-svc-ratelimited"),
        rule: response.headers.get("x-svc-ratelimit"),
        body: await response.text()
      }
    })
  })

/** Runs `body` and asserts that `door` (and only it) handed one request to the exchange. */
const answeredBy = <A, E, R>(door: Door, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const plane = yield* DataPlane
    const before = plane.doors()
    const result = yield* body
    const after = plane.doors()
    assert.deepStrictEqual(
      { warm: after.warm - before.warm, cold: after.cold - before.cold },
      door === "warm" ? { warm: 1, cold: 0 } : { warm: 0, cold: 1 },
      `the ${door} door answered`
    )
    return result
  })

layer(Test, { timeout: "30 seconds" })("Exchange stages", (it) => {
  for (const door of ["cold", "warm"] as const) {
    it.effect(
      `${door} door: a rate-limit answer through _proxy: no upstream call, no later stage, one event from svc`,
      () =>
        Effect.gen(function* () {
          const phase = `limited-${door}-envelope`
          const before = upstreamRequests()
          const rejected = yield* answeredBy(
            door,
            envelopeThrough(door, {
              url: `${upstreamOrigin}/v1/items?page=2`,
              method: "post",
              labels: { phase },
              bodyJson: { a: 1 }
            })
          )
          assert.strictEqual(rejected.status, 429)
          assert.strictEqual(rejected.headers.get("retry-after"), "7")
          assert.strictEqual(rejected.headers.get("x-svc-ratelimited"), "true")
          assert.strictEqual(rejected.headers.get("x-svc-ratelimit"), "rl_enforced")
          assert.deepStrictEqual(rejected.body, {
            error: "rate limited",
            rate_limit_id: "rl_enforced",
            retry_after_seconds: 7
          })
          assert.strictEqual(upstreamRequests(), before, "the upstream was not called")
          assert.deepStrictEqual(
            ran.filter((stage) => stage.includes(`:${phase}`)),
            [`limit:${phase}`]
          )

          const event = eventOf(phase)
          assert.strictEqual(event.response_source, "rate_limit")
          assert.strictEqual(event.response_status_code, 429)
          assert.deepStrictEqual(rateLimitFields(event), enforced)
          assert.strictEqual(event.type, "proxy")
          assert.strictEqual(event.method, "POST")
          assert.strictEqual(event.path, "/v1/items")
          assert.strictEqual(event.namespace, "root.pipeline")
          assert.strictEqual(event.actor_id, "act_pipeline")
          assert.strictEqual(event.labels.tier, "gold")
          assert.strictEqual(event.labels["svc/act/-/id"], "act_pipeline")
          assert.isFalse(event.full_request_recorded)
        })
    )

    it.effect(
      `${door} door: a cool-down answer through _proxy_raw: a synthetic 429 on the wire, the rule matches kept`,
      () =>
        Effect.gen(function* () {
          const phase = `cooling-${door}-raw`
          const before = upstreamRequests()
          const answer = yield* answeredBy(
            door,
            rawThrough(door, { "x-svc-upstream-url": `${upstreamOrigin}/stream`, "x-svc-label": `phase=${phase}` })
          )
          assert.deepStrictEqual(
            [answer.status, answer.ratelimited, answer.rule, JSON.parse(answer.body)],
            [429, "true", null, { error: "rate limited", rate_limit_id: null, retry_after_seconds: 7 }]
          )
          assert.strictEqual(upstreamRequests(), before, "the upstream was not called")
          assert.deepStrictEqual(
            ran.filter((stage) => stage.includes(`:${phase}`)),
            [`limit:${phase}`]
          )

          const event = eventOf(phase)
          assert.strictEqual(event.response_source, "connector_rate_limiter")
          assert.strictEqual(event.response_status_code, 429)
          assert.deepStrictEqual(rateLimitFields(event), observed)
          assert.strictEqual(event.path, "/stream")
        })
    )

    it.effect(
      `${door} door: a request every stage lets through reaches the upstream; its event carries the observe match`,
      () =>
        Effect.gen(function* () {
          const phase = `through-${door}`
          const before = upstreamRequests()
          const answer = yield* answeredBy(
            door,
            envelopeThrough(door, { url: `${upstreamOrigin}/json`, method: "GET", labels: { phase } })
          )
          assert.strictEqual(answer.status, 200)
          const upstream = answer.body as { readonly statusCode: number; readonly bodyJson?: unknown }
          assert.deepStrictEqual([upstream.statusCode, upstream.bodyJson], [200, { ok: true }])
          assert.strictEqual(upstreamRequests(), before + 1)
          assert.deepStrictEqual(
            ran.filter((stage) => stage.includes(`:${phase}`)),
            [`limit:${phase}`, `answered:${phase}:200:application/json`]
          )
          const event = eventOf(phase)
          assert.strictEqual(event.response_source, "upstream")
          assert.strictEqual(event.response_status_code, 200)
          assert.deepStrictEqual(rateLimitFields(event), observed)
        })
    )

    it.effect(`${door} door: an upstream's X-Svc-* headers never reach the caller, raw or in an envelope`, () =>
      Effect.gen(function* () {
        const raw = yield* answeredBy(
          door,
          Effect.gen(function* () {
            const plane = yield* DataPlane
            const front =
              door === "cold"
                ? yield* effectServer((request, response) => plane.proxyRaw(actor, connectionId, request, response))
                : yield* warmServer(plane.warmDoor("api"))
            return yield* Effect.promise(async () => {
              const response = await fetch(`${front.origin}/api/v1/connections/${connectionId}/_proxy_raw`, {
                headers: {
                  authorization: "Bearer warm",
                  "x-svc-upstream-url": `${upstreamOrigin}/forged`,
                  "x-svc-label": `phase=forged-${door}-raw`
                }
              })
              await response.arrayBuffer()
              return { status: response.status, headers: Object.fromEntries(response.headers) }
            })
          })
        )
        assert.strictEqual(raw.status, 429)
        assert.strictEqual(raw.headers["x-upstream"], "kept")
        assert.deepStrictEqual(
          Object.keys(raw.headers).filter((name) => name.startsWith("x-svc-")),
          [],
          "no X-Svc-* header of the upstream on the raw answer"
        )
        const envelope = yield* answeredBy(
          door,
          envelopeThrough(door, { url: `${upstreamOrigin}/forged`, method: "GET", labels: { phase: `forged-${door}` } })
        )
        assert.strictEqual(envelope.status, 200)
        assert.isNull(envelope.headers.get("x-svc-ratelimited"))
        const inner = envelope.body as { readonly statusCode: number; readonly headers: Record<string, unknown> }
        assert.strictEqual(inner.statusCode, 429)
        assert.strictEqual(inner.headers["x-upstream"], "kept")
        assert.deepStrictEqual(
          Object.keys(inner.headers).filter((name) => name.toLowerCase().startsWith("x-svc-")),
          [],
          "no X-Svc-* header of the upstream in the envelope"
        )
      })
    )

    it.effect(`${door} door: an upstream HEAD for a caller's GET is answered without a body and cannot desync`, () =>
      Effect.gen(function* () {
        const plane = yield* DataPlane
        const front =
          door === "cold"
            ? yield* effectServer((request, response) => plane.proxyRaw(actor, connectionId, request, response))
            : yield* warmServer(plane.warmDoor("api"))
        const seen = upstreamSeen().length
        // One kept-alive socket: a body announced but never sent would hold the first answer open
        // (and the second request would be read as its body).
        const agent = new Agent({ keepAlive: true, maxSockets: 1 })
        yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
        const get = (phase: string, method: string | undefined) =>
          Effect.promise(
            () =>
              new Promise<{ status: number; length: string | undefined; body: string }>((resolve, reject) => {
                const timer = setTimeout(() => reject(new Error(`${phase}: the answer never ended`)), 10_000)
                const outgoing = httpRequest(
                  `${front.origin}/api/v1/connections/${connectionId}/_proxy_raw`,
                  {
                    agent,
                    headers: {
                      authorization: "Bearer warm",
                      "x-svc-upstream-url": `${upstreamOrigin}/sized`,
                      "x-svc-label": `phase=${phase}`,
                      ...(method === undefined ? {} : { "x-svc-upstream-method": method })
                    }
                  },
                  (response) => {
                    let body = ""
                    response.on("data", (chunk: Buffer) => {
                      body += chunk.toString()
                    })
                    response.on("end", () => {
                      clearTimeout(timer)
                      resolve({ status: response.statusCode ?? 0, length: response.headers["content-length"], body })
                    })
                  }
                )
                outgoing.on("error", reject)
                outgoing.end()
              })
          )
        const head = yield* answeredBy(door, get(`head-${door}`, "HEAD"))
        assert.deepStrictEqual(head, { status: 200, length: undefined, body: "" })
        const next = yield* answeredBy(door, get(`after-head-${door}`, undefined))
        assert.deepStrictEqual(next, { status: 200, length: "11", body: '{"ok":true}' })
        assert.deepStrictEqual(upstreamSeen().slice(seen), ["HEAD /sized", "GET /sized"])
      })
    )

    it.effect(`${door} door: response headers over the limit are 502 upstream_response_headers_too_large`, () =>
      Effect.gen(function* () {
        const plane = yield* DataPlane
        // The cold door's error goes back to the HttpApi handler, which encodes it: here, as it would.
        const front =
          door === "cold"
            ? yield* effectServer((request, response) =>
                plane.proxyRaw(actor, connectionId, request, response).pipe(
                  Effect.catch((error) =>
                    Effect.sync(() => {
                      response.writeHead(error._tag === "BadGateway" ? 502 : 599, {
                        "content-type": "application/json"
                      })
                      response.end(JSON.stringify({ error: error.error, code: error.code }))
                    })
                  )
                )
              )
            : yield* warmServer(plane.warmDoor("api"))
        const raw = yield* answeredBy(
          door,
          Effect.promise(async () => {
            const response = await fetch(`${front.origin}/api/v1/connections/${connectionId}/_proxy_raw`, {
              headers: {
                authorization: "Bearer warm",
                "x-svc-upstream-url": `${upstreamOrigin}/big-headers`,
                "x-svc-label": `phase=big-raw-${door}`
              }
            })
            return { status: response.status, body: await response.text() }
          })
        )
        const envelope = yield* answeredBy(
          door,
          envelopeThrough(door, {
            url: `${upstreamOrigin}/big-headers`,
            method: "GET",
            labels: { phase: `big-${door}` }
          }).pipe(
            Effect.catch((error) =>
              Effect.succeed({
                status: error._tag === "BadGateway" ? 502 : 0,
                body: { error: error.error, code: error.code } as unknown
              })
            )
          )
        )
        const expected = {
          error: "The upstream response headers are larger than allowed",
          code: "upstream_response_headers_too_large"
        }
        assert.deepStrictEqual([raw.status, JSON.parse(raw.body)], [502, expected])
        assert.deepStrictEqual([envelope.status, envelope.body], [502, expected])
        assert.strictEqual(eventOf(`big-${door}`).response_status_code, null)
      })
    )

    it.effect(`${door} door: _proxy_raw relays 103 Early Hints, and trailers to a caller that sent TE: trailers`, () =>
      Effect.gen(function* () {
        const plane = yield* DataPlane
        const front =
          door === "cold"
            ? yield* effectServer((request, response) => plane.proxyRaw(actor, connectionId, request, response))
            : yield* warmServer(plane.warmDoor("api"))
        const seen = upstreamTe().length
        const get = (phase: string, te: string | undefined) =>
          Effect.promise(
            () =>
              new Promise<{
                hints: Array<string>
                status: number
                body: string
                trailers: Record<string, string | undefined>
              }>((resolve, reject) => {
                const hints: Array<string> = []
                const outgoing = httpRequest(
                  `${front.origin}/api/v1/connections/${connectionId}/_proxy_raw`,
                  {
                    headers: {
                      authorization: "Bearer warm",
                      "x-svc-upstream-url": `${upstreamOrigin}/hints`,
                      "x-svc-label": `phase=${phase}`,
                      ...(te === undefined ? {} : { te })
                    }
                  },
                  (response) => {
                    let body = ""
                    response.on("data", (chunk: Buffer) => {
                      body += chunk.toString()
                    })
                    response.on("end", () =>
                      resolve({ hints, status: response.statusCode ?? 0, body, trailers: { ...response.trailers } })
                    )
                  }
                )
                outgoing.on("information", (info) => {
                  hints.push(`${info.statusCode} ${JSON.stringify(info.headers)}`)
                })
                outgoing.on("error", reject)
                outgoing.end()
              })
          )
        const hint = `103 ${JSON.stringify({ link: "</style.css>; rel=preload; as=style" })}`
        const asked = yield* answeredBy(door, get(`trailers-${door}`, "trailers"))
        assert.deepStrictEqual(asked, { hints: [hint], status: 200, body: "body", trailers: { "x-checksum": "abc" } })
        const plain = yield* answeredBy(door, get(`no-trailers-${door}`, undefined))
        assert.deepStrictEqual(plain, { hints: [hint], status: 200, body: "body", trailers: {} })
        assert.deepStrictEqual(
          upstreamTe().slice(seen),
          ["trailers", undefined],
          "TE: trailers asked upstream only for the caller who did"
        )
      })
    )

    it.effect(`${door} door: one path and method form for the rules, the event and the upstream`, () =>
      Effect.gen(function* () {
        const seen = upstreamSeen().length
        for (const [n, path] of [
          [1, "/v1/%61dmin?q=%61"],
          [2, "/%76%31/admin"],
          [3, "/v1/%7Eu%2fx/%2e%2e/admin%3a"]
        ] as const) {
          const phase = `form${n}-${door}`
          const answer = yield* answeredBy(
            door,
            envelopeThrough(door, { url: `${upstreamOrigin}${path}`, method: "get", labels: { phase } })
          )
          assert.strictEqual(answer.status, 200)
          assert.strictEqual(eventOf(phase).method, "GET")
        }
        assert.deepStrictEqual(
          limited.filter((line) => line.startsWith("form") && line.includes(`-${door} `)),
          [`form1-${door} GET /v1/admin`, `form2-${door} GET /v1/admin`, `form3-${door} GET /v1/admin%3A`]
        )
        assert.deepStrictEqual(upstreamSeen().slice(seen), ["GET /v1/admin?q=%61", "GET /v1/admin", "GET /v1/admin%3A"])
        assert.deepStrictEqual(
          ["form1", "form2", "form3"].map((form) => eventOf(`${form}-${door}`).path),
          ["/v1/admin", "/v1/admin", "/v1/admin%3A"]
        )
      })
    )
  }

  it.effect(
    "the warm door answers a request error as the route does, and leaves what it does not know to the router",
    () =>
      Effect.gen(function* () {
        const plane = yield* DataPlane
        const front = yield* warmServer(plane.warmDoor("api"))
        const send = (path: string, init: RequestInit) =>
          Effect.promise(async () => {
            const response = await fetch(`${front.origin}${path}`, init)
            return { status: response.status, body: await response.text() }
          })
        const raw = `/api/v1/connections/${connectionId}/_proxy_raw`
        const envelopePath = `/api/v1/connections/${connectionId}/_proxy`
        const before = plane.doors()
        // Taken, and refused as the route refuses them.
        const noUrl = yield* send(raw, { headers: { authorization: "Bearer warm" } })
        assert.deepStrictEqual(
          [noUrl.status, JSON.parse(noUrl.body)],
          [
            400,
            {
              error: "header.x-svc-upstream-url is required",
              code: "invalid_request",
              details: [{ field: "header.x-svc-upstream-url", message: "header.x-svc-upstream-url is required" }]
            }
          ]
        )
        const post = (body: string) =>
          send(envelopePath, {
            method: "POST",
            headers: { authorization: "Bearer warm", "content-type": "application/json" },
            body
          })
        const notJson = yield* post("{nope")
        assert.deepStrictEqual(
          [notJson.status, JSON.parse(notJson.body)],
          [
            400,
            {
              error: "invalid request body",
              code: "invalid_request",
              details: [{ field: "body", message: "Expected a valid JSON body" }]
            }
          ]
        )
        const twice = yield* post(
          JSON.stringify({ url: `${upstreamOrigin}/json`, method: "GET", bodyJson: {}, bodyRaw: "" })
        )
        assert.deepStrictEqual([twice.status, JSON.parse(twice.body).code], [400, "invalid_request"])
        const excess = yield* post(JSON.stringify({ url: `${upstreamOrigin}/json`, method: "GET", extra: 1 }))
        assert.deepStrictEqual([excess.status, JSON.parse(excess.body).code], [400, "invalid_request"])
        assert.deepStrictEqual(plane.doors().warm - before.warm, 4)
        // Not taken: another caller, a query string, an encoded id, another route or method, no JSON.
        const declined = [
          yield* send(raw, { headers: { authorization: "Bearer other" } }),
          yield* send(raw, { headers: {} }),
          yield* send(`${raw}?x=1`, { headers: { authorization: "Bearer warm" } }),
          yield* send(raw.replace("cxn_", "cxn%5F"), { headers: { authorization: "Bearer warm" } }),
          yield* send(raw, { method: "OPTIONS", headers: { authorization: "Bearer warm" } }),
          yield* send(`/api/v1/connections/${connectionId}`, { headers: { authorization: "Bearer warm" } }),
          yield* send(envelopePath, {
            method: "POST",
            headers: { authorization: "Bearer warm", "content-type": "text/plain" },
            body: "{}"
          }),
          yield* send(envelopePath, {
            method: "POST",
            headers: { authorization: "Bearer warm", "content-type": "application/json" }
          })
        ]
        assert.deepStrictEqual(
          declined.map((answer) => answer.status),
          declined.map(() => 598)
        )
        assert.deepStrictEqual(plane.doors().warm - before.warm, 4)
        assert.deepStrictEqual(plane.doors().cold - before.cold, 0)
      })
  )
})
