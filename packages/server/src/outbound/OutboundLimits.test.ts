import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { Readable } from "node:stream"
import { setTimeout as sleep } from "node:timers/promises"
import { BadGateway, BadRequest, GatewayTimeout } from "@svc/domain/Errors"
import type { Resolver } from "./GuardedConnector.ts"
import { Outbound, type SendOptions } from "./Outbound.ts"
import { OutboundError, type OutboundErrorReason, outboundHttpError } from "./OutboundError.ts"
import { localServer, startLocalServer } from "./testing/LocalServer.ts"

const resolve: Resolver = (hostname) =>
  hostname === "stall.test"
    ? new Promise(() => {})
    : Promise.reject(Object.assign(new Error("not found"), { code: "ENOTFOUND" }))

/** Allowed: the test names on their default port and 127.0.0.1 on the local servers' ports. */
const allowedHosts = ["127.0.0.1", "stall.test", "nowhere.test"]
const servers: Array<number> = []

const serve = (handler: Parameters<typeof localServer>[0]) =>
  Effect.tap(localServer(handler), (server) => Effect.sync(() => servers.push(server.port)))

const options = (over: Partial<SendOptions["timeouts"]> = {}, maxResponseBytes = 1024 * 1024): SendOptions => ({
  policy: {
    allowedHosts: [...allowedHosts, ...servers.map((port) => `127.0.0.1:${port}`)],
    allowPrivateNetworks: true
  },
  timeouts: { connectMs: 5_000, firstByteMs: 5_000, totalMs: 10_000, ...over },
  maxResponseBytes
})

const get = (url: string, headers: Record<string, string> = {}) => ({ method: "GET", url: new URL(url), headers })

const test = (name: string, body: () => Effect.Effect<void, unknown, Outbound | Scope.Scope>) =>
  it.live(name, () => body().pipe(Effect.scoped, Effect.provide(Outbound.layerWith({ resolve }))))

const sendFailure = (...args: Parameters<Outbound["Service"]["send"]>) =>
  Effect.flatMap(Outbound, (outbound) => Effect.flip(outbound.send(...args)))

describe("Outbound.send limits", () => {
  test("a server that never sends headers fails with timeout (first byte)", () =>
    Effect.gen(function* () {
      const server = yield* serve(() => {})
      const error = yield* sendFailure(get(`${server.origin}/slow`), options({ firstByteMs: 100 }))
      assert.strictEqual(error.reason, "timeout")
      assert.include(error.detail, "response headers")
    }))

  test("the first-byte deadline starts once the request body has been sent, not during a slow upload", () =>
    Effect.gen(function* () {
      // Issue 32 item 15: 8 chunks, 60 ms apart, take longer than the 100 ms first-byte deadline;
      // the upstream answers as soon as it has the whole body.
      const server = yield* serve((request, response) => response.end(String(request.body.length)))
      const slowBody = () =>
        Readable.from(
          (async function* () {
            for (let i = 0; i < 8; i++) {
              await sleep(60)
              yield Buffer.alloc(1024, 97)
            }
          })()
        )
      const outbound = yield* Outbound
      const streamed = yield* outbound.stream(
        { method: "POST", url: new URL(`${server.origin}/upload`), headers: {}, body: slowBody() },
        options({ firstByteMs: 100 })
      )
      const text = yield* Effect.promise(
        () =>
          new Promise<string>((resolve, reject) => {
            let received = ""
            streamed.body.pipe(
              {
                write: (chunk) => {
                  received += Buffer.from(chunk).toString()
                  return true
                },
                end: () => resolve(received),
                once: () => undefined
              },
              () => reject(new Error("the body was cut"))
            )
          })
      )
      assert.deepStrictEqual([streamed.status, text], [200, "8192"])
      // Still a deadline once the body is sent: an upstream that then stays silent times out.
      const silent = yield* serve(() => {})
      const error = yield* Effect.flip(
        outbound.stream(
          { method: "POST", url: new URL(`${silent.origin}/upload`), headers: {}, body: slowBody() },
          options({ firstByteMs: 100 })
        )
      )
      assert.strictEqual(error.reason, "timeout")
      assert.include(error.detail, "response headers")
    }))

  it.live(
    "response headers over the configured limit fail with response_headers_too_large, on both kinds of send",
    () =>
      Effect.gen(function* () {
        // Issue 32 item 14: a specific reason (502 upstream_response_headers_too_large), and the limit a setting.
        const server = yield* serve((request, response) => {
          response.writeHead(200, { "x-big": "b".repeat(request.url === "/large" ? 8 * 1024 : 2 * 1024) })
          response.end("ok")
        })
        const outbound = yield* Outbound
        const large = get(`${server.origin}/large`)
        const buffered = yield* Effect.flip(outbound.send(large, options()))
        const streamed = yield* Effect.flip(outbound.stream(large, options()))
        for (const error of [buffered, streamed]) {
          assert.strictEqual(error.reason, "response_headers_too_large")
          assert.strictEqual(outboundHttpError(error).code, "upstream_response_headers_too_large")
        }
        const small = yield* outbound.send(get(`${server.origin}/small`), options())
        assert.strictEqual(small.status, 200)
      }).pipe(Effect.scoped, Effect.provide(Outbound.layerWith({ resolve, maxResponseHeaderBytes: 4096 })))
  )

  test("a body that never ends fails with timeout (total)", () =>
    Effect.gen(function* () {
      const server = yield* serve((_request, response) => {
        response.writeHead(200, { "content-type": "text/plain" })
        response.write("partial")
      })
      const error = yield* sendFailure(get(`${server.origin}/dribble`), options({ totalMs: 300 }))
      assert.strictEqual(error.reason, "timeout")
      assert.include(error.detail, "complete response")
    }))

  test("a connection that never establishes fails with timeout (connect)", () =>
    Effect.gen(function* () {
      const error = yield* sendFailure(get("http://stall.test/"), options({ connectMs: 100 }))
      assert.strictEqual(error.reason, "timeout")
      assert.include(error.detail, "no connection")
    }))

  test("an unresolvable name fails with dns_failed", () =>
    Effect.gen(function* () {
      const error = yield* sendFailure(get("http://nowhere.test/"), options())
      assert.strictEqual(error.reason, "dns_failed")
    }))

  test("a closed port fails with connect_failed", () =>
    Effect.gen(function* () {
      const server = yield* Effect.promise(() => startLocalServer((_request, response) => response.end()))
      servers.push(server.port)
      yield* Effect.promise(() => server.close())
      const error = yield* sendFailure(get(`${server.origin}/`), options())
      assert.strictEqual(error.reason, "connect_failed")
    }))

  test("caps the response body, declared or streamed", () =>
    Effect.gen(function* () {
      const server = yield* serve((request, response) => {
        if (request.url === "/declared") {
          response.end("x".repeat(2048))
        } else if (request.url === "/streamed") {
          response.write("y".repeat(600))
          setTimeout(() => response.end("y".repeat(600)), 10)
        } else {
          response.end("z".repeat(1000))
        }
      })
      const declared = yield* sendFailure(get(`${server.origin}/declared`), options({}, 1000))
      assert.strictEqual(declared.reason, "response_too_large")
      const streamed = yield* sendFailure(get(`${server.origin}/streamed`), options({}, 1000))
      assert.strictEqual(streamed.reason, "response_too_large")
      const outbound = yield* Outbound
      const exact = yield* outbound.send(get(`${server.origin}/exact`), options({}, 1000))
      assert.strictEqual(exact.body.byteLength, 1000)
    }))

  test("refuses other schemes, user info and credential-echoing methods", () =>
    Effect.gen(function* () {
      const server = yield* serve((_request, response) => response.end())
      const ftp = yield* sendFailure(get(`ftp://127.0.0.1:${server.port}/`), options())
      assert.strictEqual(ftp.reason, "host_not_allowed")
      const userInfo = yield* sendFailure(get(`http://user:pw@127.0.0.1:${server.port}/`), options())
      assert.strictEqual(userInfo.reason, "invalid_request")
      for (const method of ["TRACE", "trace", "TRACK", "CONNECT", "GET /x"]) {
        const refused = yield* sendFailure({ ...get(`${server.origin}/`), method }, options())
        assert.strictEqual(refused.reason, "invalid_request", method)
      }
      const badHeader = yield* sendFailure(get(`${server.origin}/`, { "x-a": "1\r\nx-b: 2" }), options())
      assert.strictEqual(badHeader.reason, "invalid_request")
      assert.strictEqual(server.requests.length, 0)
    }))

  test("error messages never carry header values or query strings", () =>
    Effect.gen(function* () {
      const server = yield* serve(() => {})
      const secret = "s3cret-value"
      const request = get(`${server.origin}/path?api_key=${secret}`, { authorization: `Bearer ${secret}` })
      const denied = yield* sendFailure(request, {
        ...options(),
        policy: { allowedHosts: [], allowPrivateNetworks: true }
      })
      const timedOut = yield* sendFailure(request, options({ firstByteMs: 100 }))
      for (const error of [denied, timedOut]) {
        const rendered = `${error.message} ${String(error)} ${JSON.stringify(error)}`
        assert.notInclude(rendered, secret)
        assert.notInclude(rendered, "api_key")
        assert.include(error.message, `http://127.0.0.1:${server.port}/path`)
      }
    }))
})

describe("outboundHttpError", () => {
  it.each<readonly [OutboundErrorReason, 400 | 502 | 504, string]>([
    ["host_not_allowed", 400, "upstream_host_not_allowed"],
    ["address_not_allowed", 400, "upstream_address_not_allowed"],
    ["invalid_request", 400, "invalid_upstream_request"],
    ["dns_failed", 502, "upstream_dns_failed"],
    ["connect_failed", 502, "upstream_unreachable"],
    ["protocol_error", 502, "upstream_protocol_error"],
    ["response_too_large", 502, "upstream_response_too_large"],
    ["response_headers_too_large", 502, "upstream_response_headers_too_large"],
    ["timeout", 504, "upstream_timeout"]
  ])("%s → %s %s", (reason, status, code) => {
    const error = outboundHttpError(new OutboundError({ reason, target: "https://h:443/p", detail: "d" }))
    const statusOf = error instanceof BadRequest ? 400 : error instanceof BadGateway ? 502 : 504
    assert.strictEqual(statusOf, status)
    assert.isTrue(error instanceof BadRequest || error instanceof BadGateway || error instanceof GatewayTimeout)
    assert.strictEqual(error.code, code)
    assert.notInclude(error.error, "https://h")
  })
})
