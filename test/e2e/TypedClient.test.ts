/**
 * The typed client of docs/client.md (issue 21 item 6), run as a host application would run it:
 * `test/examples/SvcClient.ts`, the very code the page shows, lists a connector's connections and
 * proxies a request through one of them against a started embedded svc and a local upstream.
 */
import { Effect, Exit } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listAndProxy, SvcClient } from "../examples/SvcClient.ts"
import { launch, resources, type Svc } from "../support/Api.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const repo = path.resolve(import.meta.dirname, "../..")

let svc: Svc
let upstream: Upstream
let connectorId: string
let connectionIds: ReadonlyArray<string>

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/hello", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"hi":1}' }))
  svc = await launch("svc-e2e-client-")
  const r = resources(svc)
  const ns = await r.freshNamespace("client")
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
    }
  })
  connectorId = connector.id
  const first = await r.connection(connectorId, { credentials: { api_key: "k1" } })
  const second = await r.connection(connectorId, { credentials: { api_key: "k2" } })
  connectionIds = [first.id, second.id]
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
})

const run = <A, E>(effect: Effect.Effect<A, E, SvcClient>, token = svc.adminToken) =>
  Effect.runPromiseExit(
    effect.pipe(Effect.provide(SvcClient.layer({ baseUrl: `http://127.0.0.1:${svc.ports.api}`, token })))
  )

describe("the typed client of docs/client.md", () => {
  it("lists the connector's connections and proxies a request through the first", async () => {
    const before = upstream.seen().length
    const exit = await run(listAndProxy(connectorId, `${upstream.origin}/hello?x=1`))
    if (!Exit.isSuccess(exit)) throw new Error(`the example failed: ${String(exit.cause)}`)
    const { connections, answer } = exit.value
    expect(connections.map((c) => c.id).sort()).toStrictEqual([...connectionIds].sort())
    expect(connections.every((c) => c.state === "configured" && c.connectorId === connectorId)).toBe(true)
    expect(answer?.statusCode).toBe(200)
    expect(answer?.bodyJson).toStrictEqual({ hi: 1 })
    const seen = upstream.seen().slice(before)
    expect(seen.map((s) => `${s.method} ${s.path}`)).toStrictEqual(["GET /hello"])
    // The first connection listed made the call, with its own credentials.
    const key = connections[0]?.id === connectionIds[0] ? "k1" : "k2"
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${key}`)
  })

  it("fails with the typed error of the answer: 401 Unauthorized for a bad token", async () => {
    const exit = await run(listAndProxy(connectorId, `${upstream.origin}/hello`), "not-a-token")
    expect(Exit.isFailure(exit)).toBe(true)
    const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
    expect(failure?._tag === "Fail" ? failure.error : undefined).toMatchObject({ _tag: "Unauthorized" })
  })

  it("docs/client.md shows the example exactly as it runs here", async () => {
    const page = await fs.readFile(path.join(repo, "docs/client.md"), "utf8")
    const example = await fs.readFile(path.join(repo, "test/examples/SvcClient.ts"), "utf8")
    expect(page.includes(`\`\`\`ts\n${example}\`\`\``)).toBe(true)
  })
})
