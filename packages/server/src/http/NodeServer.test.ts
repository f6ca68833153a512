/**
 * The one request listener of a service's Node server (`makeNodeServer`): `observe` sees every
 * request first; a request the hook takes never reaches the router; one it leaves reaches the
 * router untouched, body included; the router's own answers are effect's; `Expect: 100-continue`
 * is continued by Node before the listener runs (no upload waits for a timeout).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import * as http from "node:http"
import { makeNodeServer } from "./NodeServer.ts"

describe("makeNodeServer", () => {
  it.effect("observe runs first for every request; the hook's requests never reach the router", () =>
    Effect.gen(function* () {
      const observed: Array<string> = []
      const routed: Array<string> = []
      const hooked: Array<string> = []
      const node = http.createServer()
      const server = yield* makeNodeServer(
        node,
        { host: "127.0.0.1", port: 0 },
        (request) => {
          observed.push(`${request.method} ${request.url}`)
        },
        (request, response) => {
          hooked.push(`${request.method} ${request.url}`)
          if (!request.url?.startsWith("/warm")) return false
          response.writeHead(200, { "content-type": "text/plain" })
          response.end("warm")
          return true
        }
      )
      // The router reads the body as a handler would: what the hook left must be the caller's bytes.
      yield* server.serve(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const body = yield* Effect.orDie(request.text)
          routed.push(`${request.method} ${request.url}`)
          return HttpServerResponse.text(body === "" ? "router" : `router ${body}`)
        })
      )
      const address = node.address()
      assert.isTrue(typeof address === "object" && address !== null)
      const origin = `http://127.0.0.1:${(address as { port: number }).port}`
      const send = (path: string, init: RequestInit = {}) =>
        Effect.promise(async () => {
          const response = await fetch(`${origin}${path}`, init)
          return [response.status, await response.text()] as const
        })
      assert.deepStrictEqual(yield* send("/warm/a"), [200, "warm"])
      assert.deepStrictEqual(yield* send("/cold/b", { method: "POST", body: "hello" }), [200, "router hello"])
      assert.deepStrictEqual(yield* send("/warm/c", { method: "PUT", body: "x" }), [200, "warm"])
      assert.deepStrictEqual(observed, ["GET /warm/a", "POST /cold/b", "PUT /warm/c"])
      assert.deepStrictEqual(hooked, observed)
      assert.deepStrictEqual(routed, ["POST /cold/b"])
      assert.strictEqual(node.listenerCount("request"), 1, "one request listener")
    }).pipe(Effect.scoped)
  )

  it.effect("a request with Expect: 100-continue is continued at once and reaches the hook", () =>
    Effect.gen(function* () {
      const node = http.createServer()
      const server = yield* makeNodeServer(
        node,
        { host: "127.0.0.1", port: 0 },
        () => {},
        (request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => response.end(`hooked ${Buffer.concat(chunks).toString("utf8")}`))
          return true
        }
      )
      yield* server.serve(Effect.succeed(HttpServerResponse.text("router")))
      const port = (node.address() as { port: number }).port
      const answer = yield* Effect.promise(
        () =>
          new Promise<string>((resolve, reject) => {
            const request = http.request({
              host: "127.0.0.1",
              port,
              method: "PUT",
              path: "/upload",
              headers: { expect: "100-continue", "content-length": "5" }
            })
            // The body is sent only once the server said 100 Continue.
            request.on("continue", () => request.end("hello"))
            request.on("response", (response) => {
              let text = ""
              response.on("data", (chunk: Buffer) => {
                text += chunk.toString("utf8")
              })
              response.on("end", () => resolve(text))
            })
            request.on("error", reject)
            request.setTimeout(10_000, () => request.destroy(new Error("no answer")))
          })
      )
      assert.strictEqual(answer, "hooked hello")
    }).pipe(Effect.scoped)
  )

  it.effect("without a hook every request reaches the router", () =>
    Effect.gen(function* () {
      const observed: Array<string> = []
      const node = http.createServer()
      const server = yield* makeNodeServer(
        node,
        { host: "127.0.0.1", port: 0 },
        (request) => {
          observed.push(request.url ?? "")
        },
        undefined
      )
      yield* server.serve(Effect.succeed(HttpServerResponse.text("router")))
      const port = (node.address() as { port: number }).port
      const text = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/x`).then((r) => r.text()))
      assert.strictEqual(text, "router")
      assert.deepStrictEqual(observed, ["/x"])
    }).pipe(Effect.scoped)
  )
})
