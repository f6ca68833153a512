/**
 * The fast path's interception (issue 16): which requests `installFastPath` offers to
 * `DataPlane.tryFastRaw` before the Effect router's `request` listener, and that a request it
 * does not take (or that the data plane declines) reaches that listener untouched, with the
 * drain's bookkeeping run exactly once either way.
 */
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import type { DataPlane } from "../proxy/DataPlane.ts"
import type { ProxyCallers } from "../proxy/ProxyCallers.ts"
import { installFastPath } from "./ProxyHttp.ts"

const actor = { id: "act_1", externalId: "alice" } as unknown as AuthenticatedActor
const known = "Bearer known-token"

interface Rig {
  readonly origin: string
  readonly offered: Array<string>
  readonly routed: Array<string>
  readonly observed: Array<string>
  accept: boolean
  readonly close: () => Promise<void>
}

let rig: Rig | undefined

const start = async (): Promise<Rig> => {
  const server = http.createServer()
  const state = {
    offered: [] as Array<string>,
    routed: [] as Array<string>,
    observed: [] as Array<string>,
    accept: true
  }
  const plane = {
    tryFastRaw: (who: AuthenticatedActor, id: string, request: http.IncomingMessage, response: http.ServerResponse) => {
      expect(who).toBe(actor)
      state.offered.push(`${request.method} ${id}`)
      if (!state.accept) return false
      response.writeHead(200, { "content-type": "text/plain" })
      response.end("fast")
      return true
    },
    knowsFast: (who: AuthenticatedActor, id: string) => who === actor && id === "cxn_abc",
    tryFastEnvelope: (
      _who: AuthenticatedActor,
      id: string,
      payload: { url: string },
      response: http.ServerResponse
    ) => {
      state.offered.push(`envelope ${id} ${payload.url}`)
      if (!state.accept) return false
      response.writeHead(200, { "content-type": "text/plain" })
      response.end("fast envelope")
      return true
    }
  } as unknown as DataPlane["Service"]
  const callers = {
    remember: () => {},
    lookup: (service: string, authorization: string) =>
      service === "api" && authorization === known ? actor : undefined
  } as unknown as ProxyCallers["Service"]
  const seen = new WeakSet<http.ServerResponse>()
  installFastPath(server, "api", plane, callers, observe, 1024 * 1024)
  function observe(request: http.IncomingMessage, response: http.ServerResponse) {
    // idempotent per request, like the drain's observer
    if (seen.has(response)) return
    seen.add(response)
    state.observed.push(request.url ?? "")
  }
  server.on("request", (request: http.IncomingMessage, response: http.ServerResponse) => {
    state.routed.push(`${request.method} ${request.url}`)
    // The router reads the body as it would decode it: a replayed one must be the caller's bytes.
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      response.writeHead(404)
      response.end(body === "" ? "router" : `router ${body}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  const created: Rig = {
    origin: `http://127.0.0.1:${port}`,
    ...state,
    get accept() {
      return state.accept
    },
    set accept(value: boolean) {
      state.accept = value
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return created
}

afterEach(async () => {
  await rig?.close()
  rig = undefined
})

const send = async (
  path: string,
  init: { method?: string; authorization?: string; body?: string; contentType?: string } = {}
) => {
  const current = rig as Rig
  const headers: Record<string, string> = {}
  if (init.authorization !== undefined) headers.authorization = init.authorization
  if (init.contentType !== undefined) headers["content-type"] = init.contentType
  const response = await fetch(`${current.origin}${path}`, {
    method: init.method ?? "GET",
    headers,
    ...(init.body === undefined ? {} : { body: init.body })
  })
  return { status: response.status, text: await response.text() }
}

describe("installFastPath", () => {
  it("offers a _proxy_raw request of a remembered caller to the data plane; the router never sees it", async () => {
    rig = await start()
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
      expect(await send("/api/v1/connections/cxn_abc/_proxy_raw", { method, authorization: known })).toEqual({
        status: 200,
        text: "fast"
      })
    }
    expect(rig.offered).toEqual(["GET cxn_abc", "POST cxn_abc", "PUT cxn_abc", "PATCH cxn_abc", "DELETE cxn_abc"])
    expect(rig.routed).toEqual([])
    expect(rig.observed).toHaveLength(5)
  })

  it("leaves to the router: unknown callers, no token, queries, encoded ids, other paths and methods", async () => {
    rig = await start()
    const cases: ReadonlyArray<readonly [string, { method?: string; authorization?: string }]> = [
      ["/api/v1/connections/cxn_abc/_proxy_raw", { authorization: "Bearer other" }],
      ["/api/v1/connections/cxn_abc/_proxy_raw", {}],
      ["/api/v1/connections/cxn_abc/_proxy_raw?x=1", { authorization: known }],
      ["/api/v1/connections/cxn%41bc/_proxy_raw", { authorization: known }],
      ["/api/v1/connections/a/b/_proxy_raw", { authorization: known }],
      ["/api/v1/connections/cxn_abc/_proxy", { method: "POST", authorization: known }],
      ["/api/v1/connections/cxn_abc", { authorization: known }],
      ["/api/v1/connections/cxn_abc/_proxy_raw", { method: "OPTIONS", authorization: known }]
    ]
    for (const [path, init] of cases) expect((await send(path, init)).text).toBe("router")
    expect(rig.offered).toEqual([])
    expect(rig.routed).toHaveLength(cases.length)
    expect(rig.observed).toEqual([])
  })

  it("a request the data plane declines reaches the router untouched", async () => {
    rig = await start()
    rig.accept = false
    expect(await send("/api/v1/connections/cxn_abc/_proxy_raw", { authorization: known })).toEqual({
      status: 404,
      text: "router"
    })
    expect(rig.offered).toEqual(["GET cxn_abc"])
    expect(rig.routed).toEqual(["GET /api/v1/connections/cxn_abc/_proxy_raw"])
    expect(rig.observed).toHaveLength(1)
  })

  it("_proxy: a decoded envelope of a remembered caller is offered; anything else reaches the router with its body", async () => {
    rig = await start()
    const path = "/api/v1/connections/cxn_abc/_proxy"
    const post = (body: string, contentType = "application/json") =>
      send(path, { method: "POST", authorization: known, body, contentType })
    const good = JSON.stringify({ url: "http://up/x", method: "GET" })
    expect(await post(good)).toEqual({ status: 200, text: "fast envelope" })
    expect(await post(good, "Application/JSON; charset=utf-8")).toEqual({ status: 200, text: "fast envelope" })
    expect(rig.offered).toEqual(["envelope cxn_abc http://up/x", "envelope cxn_abc http://up/x"])
    expect(rig.routed).toEqual([])
    // not JSON, refused by the input guard, not the schema, an excess key: given back, body and all
    for (const body of [
      "{nope",
      JSON.stringify({ url: "http://x\u0000", method: "GET" }),
      "{}",
      `${good.slice(0, -1)},"z":1}`
    ]) {
      expect(await post(body)).toEqual({ status: 404, text: `router ${body}` })
    }
    // another content type, another connection, an unknown caller: never read here
    expect(await post(good, "text/plain")).toEqual({ status: 404, text: `router ${good}` })
    expect(
      await send("/api/v1/connections/cxn_other/_proxy", {
        method: "POST",
        authorization: known,
        body: good,
        contentType: "application/json"
      })
    ).toEqual({ status: 404, text: `router ${good}` })
    rig.accept = false
    expect(await post(good)).toEqual({ status: 404, text: `router ${good}` })
    expect(rig.offered).toHaveLength(3)
    expect(rig.routed).toHaveLength(7)
  })
})
