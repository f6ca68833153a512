import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { HttpServerResponse } from "effect/http"
import { afterAll, describe, expect, it } from "vitest"
import { assetResponse, indexResponse, loadBundle, pathBelow, uiContentSecurityPolicy } from "./UiAssets.ts"

const dist = fs.mkdtempSync(path.join(os.tmpdir(), "svc-ui-assets-"))
fs.mkdirSync(path.join(dist, "connect/assets"), { recursive: true })
fs.writeFileSync(path.join(dist, "connect/index.html"), "<!doctype html><title>x</title>")
fs.writeFileSync(path.join(dist, "connect/assets/index-abc123.js"), "console.log(1)")
fs.writeFileSync(path.join(dist, "connect/assets/index-abc123.css"), "body{}")
fs.writeFileSync(path.join(dist, "connect/assets/notes.txt"), "not served")

afterAll(() => fs.rmSync(dist, { recursive: true, force: true }))

const headersOf = (response: HttpServerResponse.HttpServerResponse) => response.headers

describe("UiAssets", () => {
  it("serves the page no-cache with the CSP, framable only by the given ancestors", () => {
    const bundle = loadBundle("connect", dist)
    const framed = indexResponse(bundle, ["https://app.example.com"])
    expect(framed.status).toBe(200)
    expect(headersOf(framed)["cache-control"]).toBe("no-cache")
    expect(headersOf(framed)["content-security-policy"]).toContain("frame-ancestors https://app.example.com")
    expect(headersOf(framed)["x-frame-options"]).toBeUndefined()
    const unframed = indexResponse(bundle, [])
    expect(headersOf(unframed)["content-security-policy"]).toContain("frame-ancestors 'none'")
    expect(headersOf(unframed)["x-frame-options"]).toBe("DENY")
  })

  it("serves hashed assets immutable with their content type, and nothing else", () => {
    const bundle = loadBundle("connect", dist)
    const script = assetResponse(bundle, "assets/index-abc123.js")
    expect(script?.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
    expect((script?.body as { readonly contentType?: string } | undefined)?.contentType).toBe(
      "text/javascript; charset=utf-8"
    )
    expect(assetResponse(bundle, "assets/index-abc123.css")).toBeDefined()
    expect(assetResponse(bundle, "assets/notes.txt")).toBeUndefined()
    expect(assetResponse(bundle, "assets/../index.html")).toBeUndefined()
    expect(assetResponse(bundle, "index.html")).toBeUndefined()
  })

  it("answers 503 with instructions when the bundle was not built", () => {
    const missing = indexResponse(loadBundle("admin", dist), [])
    expect(missing.status).toBe(503)
  })

  it("allows no inline script or style", () => {
    const csp = uiContentSecurityPolicy([])
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("style-src 'self'")
    expect(csp).not.toContain("unsafe")
  })

  it("finds the path below a prefix, without the query", () => {
    expect(pathBelow("/connect/assets/x.js?v=1", "/connect/")).toBe("assets/x.js")
    expect(pathBelow("/connect/", "/connect/")).toBe("")
    expect(pathBelow("/connect", "/connect/")).toBeUndefined()
    expect(pathBelow("/other/x", "/connect/")).toBeUndefined()
  })
})
