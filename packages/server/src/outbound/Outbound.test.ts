import { subscribe, unsubscribe } from "node:diagnostics_channel"
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { Resolver } from "./GuardedConnector.ts"
import { Outbound, type SendOptions } from "./Outbound.ts"
import { localServer } from "./testing/LocalServer.ts"

const table: Record<string, ReadonlyArray<string>> = {
  "internal.test": ["127.0.0.1"],
  "mixed.test": ["127.0.0.1", "169.254.169.254"],
  "metadata.test": ["169.254.169.254"]
}
const resolve: Resolver = (hostname) => {
  if (hostname === "stall.test") return new Promise(() => {})
  const addresses = table[hostname]
  if (addresses === undefined) return Promise.reject(Object.assign(new Error("not found"), { code: "ENOTFOUND" }))
  return Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })))
}

const options = (allowedHosts: ReadonlyArray<string>, allowPrivateNetworks: boolean, over?: Partial<SendOptions>) =>
  ({
    policy: { allowedHosts, allowPrivateNetworks },
    timeouts: { connectMs: 5_000, firstByteMs: 5_000, totalMs: 10_000 },
    maxResponseBytes: 1024 * 1024,
    ...over
  }) satisfies SendOptions

const get = (url: string, headers: Record<string, string> = {}) => ({ method: "GET", url: new URL(url), headers })

const test = (name: string, body: () => Effect.Effect<void, unknown, Outbound | Scope.Scope>) =>
  it.live(name, () => body().pipe(Effect.scoped, Effect.provide(Outbound.layerWith({ resolve }))))

const sendFailure = (...args: Parameters<Outbound["Service"]["send"]>) =>
  Effect.flatMap(Outbound, (outbound) => Effect.flip(outbound.send(...args)))

/** Records undici request creations and connection attempts while `body` runs. */
const watchUndici = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const seen: Array<string> = []
    const listener = (_message: unknown, name: string | symbol) => seen.push(String(name))
    subscribe("undici:request:create", listener)
    subscribe("undici:client:beforeConnect", listener)
    subscribe("undici:client:connected", listener)
    const result = yield* body.pipe(
      Effect.ensuring(
        Effect.sync(() => {
          unsubscribe("undici:request:create", listener)
          unsubscribe("undici:client:beforeConnect", listener)
          unsubscribe("undici:client:connected", listener)
        })
      )
    )
    return { result, seen }
  })

describe("Outbound.send", () => {
  test("sends to an allowed host and returns status, headers and body", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) => {
        response.setHeader("x-echo-method", request.method)
        response.setHeader("set-cookie", ["a=1", "b=2"])
        response.end(request.body.length > 0 ? request.body : "hello")
      })
      const outbound = yield* Outbound
      const response = yield* outbound.send(
        { method: "POST", url: new URL(`${server.origin}/v1/items?x=1`), headers: { "x-trace": "t" }, body: "payload" },
        options([`127.0.0.1:${server.port}`], true)
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["x-echo-method"], "POST")
      assert.deepStrictEqual(response.headers["set-cookie"], ["a=1", "b=2"])
      assert.strictEqual(new TextDecoder().decode(response.body), "payload")
      const [received] = server.requests
      assert.strictEqual(received?.url, "/v1/items?x=1")
      assert.strictEqual(received?.headers["x-trace"], "t")
      assert.strictEqual(received?.headers["content-length"], "7")
    }))

  test("refuses a host the policy does not allow before any connection", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => response.end("no"))
      const { result, seen } = yield* watchUndici(
        sendFailure(get(`${server.origin}/`, { authorization: "Bearer s3cret" }), options(["api.example.com"], true))
      )
      assert.strictEqual(result.reason, "host_not_allowed")
      assert.deepStrictEqual(seen, [])
      assert.strictEqual(server.requests.length, 0)
    }))

  test("refuses loopback unless private networks are allowed", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => response.end("ok"))
      const error = yield* sendFailure(get(`${server.origin}/`), options([`127.0.0.1:${server.port}`], false))
      assert.strictEqual(error.reason, "address_not_allowed")
      assert.strictEqual(server.requests.length, 0)
      const outbound = yield* Outbound
      const response = yield* outbound.send(get(`${server.origin}/`), options([`127.0.0.1:${server.port}`], true))
      assert.strictEqual(response.status, 200)
    }))

  test("refuses a host name that resolves to loopback (localhost, system DNS) without the flag", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => response.end("ok"))
      const url = `http://localhost:${server.port}/`
      // System DNS: the default layer, not the test table.
      const [refused, allowed] = yield* Effect.gen(function* () {
        const outbound = yield* Outbound
        const refused = yield* Effect.flip(outbound.send(get(url), options([`localhost:${server.port}`], false)))
        const requestsAfterRefusal = server.requests.length
        const allowed = yield* outbound.send(get(url), options([`localhost:${server.port}`], true))
        return [{ reason: refused.reason, requestsAfterRefusal }, allowed] as const
      }).pipe(Effect.provide(Outbound.layer))
      assert.strictEqual(refused.reason, "address_not_allowed")
      assert.strictEqual(refused.requestsAfterRefusal, 0)
      assert.strictEqual(allowed.status, 200)
    }))

  test("connects to the address it checked and keeps the requested Host", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => response.end("ok"))
      const outbound = yield* Outbound
      const response = yield* outbound.send(
        get(`http://internal.test:${server.port}/x`),
        options([`internal.test:${server.port}`], true)
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual(server.requests[0]?.headers.host, `internal.test:${server.port}`)
    }))

  test("refuses when any resolved address is disallowed", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => response.end("ok"))
      const error = yield* sendFailure(
        get(`http://mixed.test:${server.port}/`),
        options([`mixed.test:${server.port}`], true)
      )
      assert.strictEqual(error.reason, "address_not_allowed")
      assert.include(error.detail, "cloud metadata")
      assert.strictEqual(server.requests.length, 0)
    }))

  test("refuses link-local metadata literals even with private networks allowed, without connecting", () =>
    Effect.gen(function* () {
      const { result, seen } = yield* watchUndici(
        sendFailure(get("http://169.254.169.254/latest/meta-data/"), options(["169.254.169.254"], true))
      )
      assert.strictEqual(result.reason, "address_not_allowed")
      assert.deepStrictEqual(seen, [])
      const named = yield* sendFailure(get("http://metadata.test/"), options(["metadata.test"], true))
      assert.strictEqual(named.reason, "address_not_allowed")
      const mapped = yield* sendFailure(get("http://[::ffff:169.254.169.254]/"), options(["[::ffff:a9fe:a9fe]"], true))
      assert.strictEqual(mapped.reason, "address_not_allowed")
    }))

  test("does not follow redirects; the Authorization header never reaches the target", () =>
    Effect.gen(function* () {
      const target = yield* localServer((_request, response) => response.end("target"))
      const origin = yield* localServer((_request, response) => {
        response.writeHead(302, { location: `${target.origin}/stolen` })
        response.end()
      })
      const outbound = yield* Outbound
      const response = yield* outbound.send(
        get(`${origin.origin}/start`, { authorization: "Bearer s3cret" }),
        options([`127.0.0.1:${origin.port}`, `127.0.0.1:${target.port}`], true)
      )
      assert.strictEqual(response.status, 302)
      assert.strictEqual(response.headers.location, `${target.origin}/stolen`)
      assert.strictEqual(origin.requests[0]?.headers.authorization, "Bearer s3cret")
      assert.strictEqual(target.requests.length, 0)
    }))

  test("strips hop-by-hop headers in both directions", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => {
        response.setHeader("Connection", "x-resp-drop")
        response.setHeader("X-Resp-Drop", "1")
        response.setHeader("Keep-Alive", "timeout=5")
        response.setHeader("Proxy-Authenticate", "Basic")
        response.setHeader("Proxy-Connection", "keep-alive")
        response.setHeader("Upgrade", "h2c")
        response.setHeader("X-Resp-Keep", "1")
        response.write("chunk-1 ")
        response.end("chunk-2")
      })
      const outbound = yield* Outbound
      const response = yield* outbound.send(
        get(`${server.origin}/`, {
          Connection: "X-Drop, keep-alive",
          "X-Drop": "1",
          "Keep-Alive": "timeout=5",
          TE: "trailers",
          Upgrade: "websocket",
          "Proxy-Authorization": "Basic eDp5",
          "Proxy-Connection": "keep-alive",
          Trailer: "x-checksum",
          "Transfer-Encoding": "chunked",
          Host: "evil.example",
          "X-Keep": "yes"
        }),
        options([`127.0.0.1:${server.port}`], true)
      )
      const received = server.requests[0]?.headers ?? {}
      assert.strictEqual(received["x-keep"], "yes")
      assert.strictEqual(received.host, `127.0.0.1:${server.port}`)
      for (const name of [
        "x-drop",
        "keep-alive",
        "te",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "trailer"
      ]) {
        assert.isUndefined(received[name], name)
      }
      assert.isUndefined(received["transfer-encoding"])
      assert.notInclude(String(received.connection ?? ""), "x-drop")
      assert.strictEqual(new TextDecoder().decode(response.body), "chunk-1 chunk-2")
      assert.strictEqual(response.headers["x-resp-keep"], "1")
      for (const name of [
        "connection",
        "x-resp-drop",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "upgrade",
        "transfer-encoding"
      ]) {
        assert.isUndefined(response.headers[name], name)
      }
    }))
})
