/**
 * The stages between the request log and the concurrency gate (spec 4.6 rule 5), driven through
 * the real pipeline with test stages in place of today's pass-throughs: a stage that answers
 * itself keeps the upstream uncalled, the later stages unrun, and writes one request event with
 * svc's `response_source`, status and `rate_limit_*` fields, through `_proxy` and `_proxy_raw`
 * alike; the fields of a rule that matched without rejecting reach the upstream's event.
 */
import { assert, layer } from "@effect/vitest"
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import type { RequestEvent, RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { ConnectionRow } from "@svc/sql/Rows"
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "../config/ConfigLoader.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { RequestEventSink } from "../events/RequestEventBuffer.ts"
import { redactionTargets } from "../outbound/CredentialInjection.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { upstreamOptions } from "../outbound/OutboundOptions.ts"
import { effectServer } from "../outbound/testing/EffectServer.ts"
import { localServer } from "../outbound/testing/LocalServer.ts"
import { DataPlane } from "./DataPlane.ts"
import { ProxyEvents } from "./ProxyEvents.ts"
import { type ProxyTarget, ProxyTargets } from "./ProxyTargets.ts"
import type { Stage, SvcAnswer, Verdict } from "./Stages.ts"

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

/** Events the pipeline wrote, in order; which stages ran, as `stage:phase`. */
const written: Array<RequestEvent> = []
const ran: Array<string> = []

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

/** Rejects requests labelled `phase=limited`; every other request matches an observe rule. */
const rateLimit: Stage = (request) =>
  Effect.sync((): Verdict => {
    ran.push(`rateLimit:${request.labels.phase}`)
    return request.labels.phase === "limited"
      ? { _tag: "Answer", answer: tooMany("rate_limit", "rl_enforced"), rateLimit: enforced }
      : { _tag: "Continue", rateLimit: observed }
  })

/** Answers requests labelled `phase=cooling` as the reactive limiter would. */
const coolDown: Stage = (request) =>
  Effect.sync((): Verdict => {
    ran.push(`coolDown:${request.labels.phase}`)
    return request.labels.phase === "cooling"
      ? { _tag: "Answer", answer: tooMany("connector_rate_limiter") }
      : { _tag: "Continue" }
  })

const upstreamLayer = Layer.effect(
  ProxyTargets,
  Effect.gen(function* () {
    const upstream = yield* localServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" })
      response.end('{"ok":true}')
    })
    const definition = Schema.decodeUnknownSync(ConnectorDefinition)({
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
    })
    const row = Schema.decodeUnknownSync(ConnectionRow)({
      id: makeId("cxn"),
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
      definition,
      credentials: { kind: "api_key", api_key: "pipeline-key" },
      send: upstreamOptions(definition, true),
      redact: redactionTargets(definition.auth)
    }
    upstreamOrigin = upstream.origin
    upstreamRequests = () => upstream.requests.length
    return ProxyTargets.of({
      get: () => Effect.succeed(target),
      invalidate: () => Effect.void,
      afterUnauthorized: () => Effect.succeed(undefined)
    })
  })
)
let upstreamOrigin = ""
let upstreamRequests = () => 0

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

const Test = DataPlane.layerWith({ rateLimit, coolDown }).pipe(
  Layer.provide(Layer.mergeAll(upstreamLayer, ProxyEvents.layerNoDeps(), Outbound.layer)),
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

layer(Test, { timeout: "30 seconds" })("Pipeline stages", (it) => {
  it.effect("a rate-limit answer through _proxy: no upstream call, no later stage, one event from svc", () =>
    Effect.gen(function* () {
      const plane = yield* DataPlane
      const before = upstreamRequests()
      const answer = yield* plane.proxy(actor, "cxn_any", {
        url: `${upstreamOrigin}/v1/items?page=2`,
        method: "post",
        labels: { phase: "limited" },
        bodyJson: { a: 1 }
      })
      assert.strictEqual(answer.statusCode, 429)
      assert.strictEqual(answer.headers["x-svc-ratelimited"], "true")
      assert.strictEqual(answer.headers["x-svc-ratelimit"], "rl_enforced")
      assert.deepStrictEqual(answer.bodyJson, {
        error: "rate limited",
        rate_limit_id: "rl_enforced",
        retry_after_seconds: 7
      })
      assert.strictEqual(upstreamRequests(), before, "the upstream was not called")
      assert.deepStrictEqual(
        ran.filter((stage) => stage.endsWith(":limited")),
        ["rateLimit:limited"]
      )

      const event = eventOf("limited")
      assert.strictEqual(event.response_source, "rate_limit")
      assert.strictEqual(event.response_status_code, 429)
      assert.deepStrictEqual(rateLimitFields(event), enforced)
      assert.strictEqual(event.type, "proxy")
      assert.strictEqual(event.method, "post")
      assert.strictEqual(event.path, "/v1/items")
      assert.strictEqual(event.namespace, "root.pipeline")
      assert.strictEqual(event.actor_id, "act_pipeline")
      assert.strictEqual(event.labels.tier, "gold")
      assert.strictEqual(event.labels["svc/act/-/id"], "act_pipeline")
      assert.isFalse(event.full_request_recorded)
    })
  )

  it.effect(
    "a cool-down answer through _proxy_raw: a synthetic 429 on the wire, the matches of earlier stages kept",
    () =>
      Effect.gen(function* () {
        const plane = yield* DataPlane
        const front = yield* effectServer((request, response) => plane.proxyRaw(actor, "cxn_any", request, response))
        const before = upstreamRequests()
        const [status, ratelimited, rule, body] = yield* Effect.promise(async () => {
          const response = await fetch(`${front.origin}/`, {
            headers: { "x-svc-upstream-url": `${upstreamOrigin}/stream`, "x-svc-label": "phase=cooling" }
          })
          return [
            response.status,
            response.headers.get("x-svc-ratelimited"),
            response.headers.get("x-svc-ratelimit"),
            await response.json()
          ] as const
        })
        assert.deepStrictEqual(
          [status, ratelimited, rule, body],
          [429, "true", null, { error: "rate limited", rate_limit_id: null, retry_after_seconds: 7 }]
        )
        assert.strictEqual(upstreamRequests(), before, "the upstream was not called")
        assert.deepStrictEqual(
          ran.filter((stage) => stage.endsWith(":cooling")),
          ["rateLimit:cooling", "coolDown:cooling"]
        )

        const event = eventOf("cooling")
        assert.strictEqual(event.response_source, "connector_rate_limiter")
        assert.strictEqual(event.response_status_code, 429)
        assert.deepStrictEqual(rateLimitFields(event), observed)
        assert.strictEqual(event.path, "/stream")
      })
  )

  it.effect("a request every stage lets through reaches the upstream; its event carries the observe match", () =>
    Effect.gen(function* () {
      const plane = yield* DataPlane
      const before = upstreamRequests()
      const answer = yield* plane.proxy(actor, "cxn_any", {
        url: `${upstreamOrigin}/json`,
        method: "GET",
        labels: { phase: "through" }
      })
      assert.deepStrictEqual([answer.statusCode, answer.bodyJson], [200, { ok: true }])
      assert.strictEqual(upstreamRequests(), before + 1)
      assert.deepStrictEqual(
        ran.filter((stage) => stage.endsWith(":through")),
        ["rateLimit:through", "coolDown:through"]
      )
      const event = eventOf("through")
      assert.strictEqual(event.response_source, "upstream")
      assert.strictEqual(event.response_status_code, 200)
      assert.deepStrictEqual(rateLimitFields(event), observed)
    })
  )
})
