import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { listenLoopback, makeAgents, relay } from "./HttpRelay.ts"

/** A GET with exactly `headers` (Host included), as a DNS-rebinding page or a forged client sends it. */
const get = (port: number, headers: Record<string, string>, target = "/x") =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path: target, headers, setHost: false }, (answer) => {
      let body = ""
      answer.setEncoding("utf8")
      answer.on("data", (chunk: string) => (body += chunk))
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, body }))
    })
    request.on("error", reject)
    request.end()
  })

/** The listener of `signing-proxy` and `proxy` relaying to a local target that counts what reaches it. */
const withRelay = <A>(test: (port: number, reached: () => number) => Promise<A>) =>
  Effect.scoped(
    Effect.gen(function* () {
      let hits = 0
      const target = yield* Effect.acquireRelease(
        Effect.promise(
          () =>
            new Promise<Http.Server>((resolve) => {
              const server = Http.createServer((_req, res) => {
                hits++
                res.end("target")
              })
              server.listen(0, "127.0.0.1", () => resolve(server))
            })
        ),
        (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const targetPort = (target.address() as AddressInfo).port
      const agents = yield* Effect.acquireRelease(
        Effect.sync(() => makeAgents({})),
        (agents) => Effect.sync(agents.close)
      )
      const listening = yield* listenLoopback(0, (req, res) =>
        Effect.asVoid(
          relay(
            req,
            res,
            {
              url: new URL(new URL(req.url ?? "/", "http://any").pathname, `http://127.0.0.1:${targetPort}`),
              method: "GET",
              headers: {}
            },
            agents
          )
        )
      )
      return yield* Effect.promise(() => test(listening.port, () => hits))
    })
  )

describe("local listeners refuse web pages (SECURITY.md: DNS rebinding)", () => {
  it.effect("the listener's own Host names pass, same-origin and typed-in requests too", () =>
    withRelay(async (port, reached) => {
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
        assert.deepStrictEqual(await get(port, { host }), { status: 200, body: "target" }, host)
      }
      const own = { host: `localhost:${port}` }
      assert.strictEqual((await get(port, { ...own, origin: `http://localhost:${port}` })).status, 200)
      assert.strictEqual((await get(port, { ...own, origin: `http://127.0.0.1:${port}` })).status, 200)
      assert.strictEqual((await get(port, { ...own, "sec-fetch-site": "same-origin" })).status, 200)
      assert.strictEqual((await get(port, { ...own, "sec-fetch-site": "none" })).status, 200)
      assert.strictEqual(reached(), 8)
    })
  )

  it.effect("a foreign Host (DNS rebinding), or another port is 403 foreign_host; nothing is relayed", () =>
    withRelay(async (port, reached) => {
      for (const headers of [
        { host: `evil.example:${port}` },
        { host: "127.0.0.1" },
        { host: `127.0.0.1:${port + 1}` },
        { host: `127.0.0.2:${port}` }
      ]) {
        const answer = await get(port, headers)
        assert.strictEqual(answer.status, 403, JSON.stringify(headers))
        const body = JSON.parse(answer.body) as { error: string; code: string }
        assert.strictEqual(body.code, "foreign_host")
        assert.include(body.error, "DNS rebinding")
      }
      assert.strictEqual(reached(), 0)
    })
  )

  it.effect("a cross-site Origin or Sec-Fetch-Site cross-site/same-site is 403 cross_site_request", () =>
    withRelay(async (port, reached) => {
      const own = { host: `127.0.0.1:${port}` }
      for (const headers of [
        { ...own, origin: "https://evil.example" },
        { ...own, origin: `http://evil.example:${port}` },
        { ...own, origin: `https://127.0.0.1:${port}` },
        { ...own, origin: `http://127.0.0.1:${port + 1}` },
        { ...own, origin: "null" },
        { ...own, "sec-fetch-site": "cross-site" },
        { ...own, "sec-fetch-site": "same-site" }
      ]) {
        const answer = await get(port, headers)
        assert.strictEqual(answer.status, 403, JSON.stringify(headers))
        assert.strictEqual((JSON.parse(answer.body) as { code: string }).code, "cross_site_request")
      }
      assert.strictEqual(reached(), 0)
    })
  )

  it.effect("a forward-proxy request (absolute form) names the upstream in Host; Origin still applies", () =>
    withRelay(async (port, reached) => {
      const absolute = "http://api.example.com/x"
      assert.strictEqual((await get(port, { host: "api.example.com" }, absolute)).status, 200)
      const crossSite = await get(port, { host: "api.example.com", origin: "https://evil.example" }, absolute)
      assert.strictEqual(crossSite.status, 403)
      assert.strictEqual(reached(), 1)
    })
  )
})
