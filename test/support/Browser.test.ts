/**
 * The browser driver against a tiny loopback server: cookies scoped by host:port and Path, removed
 * by Max-Age=0 and past Expires, HttpOnly recorded, redirects followed until `stopAt`, requests
 * without cookies, and HTML form parsing.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeBrowser, parseForms } from "./Browser.ts"

let server: Server
let other: Server
let origin: string
let otherOrigin: string

const listen = async (target: Server) => {
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${(target.address() as AddressInfo).port}`
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname
    if (path === "/set") {
      res.setHeader("set-cookie", ["a=1; Path=/p", "b=2", "c=3; Max-Age=60; HttpOnly; SameSite=Lax"])
      res.writeHead(302, { location: "/p/x?q=1" }).end()
    } else if (path === "/clear") {
      res.setHeader("set-cookie", ["c=; Max-Age=0", "b=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT"])
      res.end("cleared")
    } else if (path === "/loop") {
      res.writeHead(303, { location: "/loop" }).end()
    } else if (path === "/form") {
      res.end(`<form method="post" action="/submit?x=1&amp;y=2"><input type="hidden" name="h" value="&quot;v&quot;"/>
        <input name="login"><input type="password" name="pw"></form>`)
    } else {
      res.end(req.headers.cookie ?? "")
    }
  })
  other = createServer((req, res) => res.end(req.headers.cookie ?? ""))
  origin = await listen(server)
  otherOrigin = await listen(other)
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await new Promise((resolve) => other?.close(resolve))
})

describe("Browser", () => {
  it("keeps cookies per host:port and Path, honours Max-Age and Expires", async () => {
    const browser = makeBrowser()
    const journey = await browser.follow(`${origin}/set`)
    expect(journey.hops.map((hop) => [hop.method, new URL(hop.url).pathname, hop.status])).toEqual([
      ["GET", "/set", 302],
      ["GET", "/p/x", 200]
    ])
    expect(journey.final.body).toBe("a=1; b=2; c=3")
    expect((await browser.get(`${origin}/elsewhere`)).body).toBe("b=2; c=3")
    expect((await browser.get(`${origin}/elsewhere`, { cookies: false })).body).toBe("")
    expect((await browser.get(`${otherOrigin}/p/x`)).body).toBe("")
    expect(browser.cookie(origin, "c")).toMatchObject({ value: "3", httpOnly: true, sameSite: "Lax" })
    expect(browser.cookie(origin, "b")?.httpOnly).toBe(false)

    await browser.get(`${origin}/clear`)
    expect(browser.cookies(origin).map((cookie) => cookie.name)).toEqual(["a"])
    browser.setCookie(otherOrigin, "z", "9")
    expect((await browser.get(`${otherOrigin}/`)).body).toBe("z=9")
    browser.clearCookies(otherOrigin)
    expect(browser.cookies(otherOrigin)).toEqual([])
  })

  it("stops before requesting a URL accepted by stopAt, and bounds redirects", async () => {
    const browser = makeBrowser()
    const journey = await browser.follow(`${origin}/set`, { stopAt: (url) => new URL(url).pathname === "/p/x" })
    expect(journey.stoppedAt).toBe(`${origin}/p/x?q=1`)
    expect(journey.hops).toHaveLength(1)
    expect(journey.final.status).toBe(302)
    await expect(browser.follow(`${origin}/loop`, { maxRedirects: 3 })).rejects.toThrow("more than 3 redirects")
  })

  it("parses forms with decoded attributes and absolute actions", async () => {
    const page = await makeBrowser().get(`${origin}/form`)
    expect(parseForms(page.body, page.url)).toEqual([
      {
        action: `${origin}/submit?x=1&y=2`,
        method: "post",
        inputs: [
          { name: "h", type: "hidden", value: '"v"' },
          { name: "login", type: "text", value: "" },
          { name: "pw", type: "password", value: "" }
        ]
      }
    ])
  })
})
