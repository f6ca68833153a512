/**
 * `GET /docs` on the api and the admin-api (issue 21 item 7): an HTML API reference page, served
 * without a token, that embeds exactly the document `/openapi.json` serves and loads no script
 * from elsewhere (svc runs air-gapped). The unknown-path policy is unchanged beside it. Scalar's
 * 3 MB script loads at the first request of the page, not at start (issue 30).
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Agent, fetch as undiciFetch } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch, type Svc } from "../support/Api.ts"

const insecure = new Agent({ connect: { rejectUnauthorized: false } })

interface Answer {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

/** The document a Scalar page embeds: the `content:` line of its `createApiReference` call. */
const embeddedDocument = (html: string): unknown => {
  const call = html.slice(html.lastIndexOf("window.Scalar.createApiReference("))
  const line = /^\s*content: (.*)$/m.exec(call)?.[1]
  if (line === undefined) throw new Error("the page embeds no document")
  return JSON.parse(line)
}

const preload = pathToFileURL(path.join(import.meta.dirname, "../support/ModuleLogPreload.ts")).href

describe("GET /docs", () => {
  let svc: Svc
  let moduleLog: string
  beforeAll(async () => {
    moduleLog = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "svc-e2e-docs-modules-")), "modules.log")
    svc = await launch("svc-e2e-docs-", {
      env: {
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${preload}`.trim(),
        SVC_TEST_MODULE_LOG: moduleLog
      }
    })
  }, 120_000)
  afterAll(async () => {
    await svc?.stop()
    await fs.rm(path.dirname(moduleLog), { recursive: true, force: true })
  })

  const get = async (service: "api" | "admin-api", path: string, token?: string): Promise<Answer> => {
    const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
    const response =
      service === "api"
        ? await fetch(`http://127.0.0.1:${svc.ports.api}${path}`, { headers })
        : await undiciFetch(`https://127.0.0.1:${svc.ports.adminApi}${path}`, { headers, dispatcher: insecure })
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text()
    }
  }

  it("Scalar's script loads at the first request of a page, not at start", async () => {
    const scalarLoaded = async () => /httpApiScalar/i.test(await fs.readFile(moduleLog, "utf8"))
    // the log works: the server's own chunks are in it
    expect(/\/dist\/chunks\/Serve-/.test(await fs.readFile(moduleLog, "utf8"))).toBe(true)
    expect(await scalarLoaded()).toBe(false)
    expect((await get("api", "/docs")).status).toBe(200)
    expect(await scalarLoaded()).toBe(true)
  })

  for (const [service, title] of [
    ["api", "svc application API"],
    ["admin-api", "svc admin API"]
  ] as const) {
    it(`${service}: an HTML reference page embedding the /openapi.json document, without a token`, async () => {
      const page = await get(service, "/docs")
      expect(page.status).toBe(200)
      expect(page.contentType).toMatch(/^text\/html/)
      // Booleans, not matchers on the text: a failure must not print a 3 MB page.
      expect(/^<!doctype html>/i.test(page.text)).toBe(true)
      expect(page.text.includes(`<title>${title}</title>`)).toBe(true)
      expect(page.text.includes("window.Scalar.createApiReference(")).toBe(true)
      // Air-gapped: the Scalar script is inline (no script is loaded from elsewhere), and so are the fonts.
      expect(/<script[^>]*\ssrc=/i.test(page.text)).toBe(false)
      expect(page.text.includes('"withDefaultFonts":false')).toBe(true)

      const openapi = await get(service, "/openapi.json")
      expect(openapi.status).toBe(200)
      const document = JSON.parse(openapi.text) as {
        info: { title: string }
        components: { schemas: Record<string, unknown> }
      }
      expect(document.info.title).toBe(title)
      expect(embeddedDocument(page.text)).toStrictEqual(document)
      expect(Object.keys(document.components.schemas)).toContain("Connection")
    })

    it(`${service}: the unknown-path policy beside it is unchanged`, async () => {
      const anonymous = await get(service, "/api/v1/no-such-route")
      expect(anonymous.status).toBe(401)
      expect(JSON.parse(anonymous.text)).toStrictEqual({ error: "a bearer token is required", code: "unauthorized" })
      const known = await get(service, "/api/v1/no-such-route", svc.adminToken)
      expect(known.status).toBe(404)
      expect(JSON.parse(known.text)).toStrictEqual({ error: "not found", code: "not_found" })
      const outside = await get(service, "/docs/no-such-page")
      expect(outside.status).toBe(404)
    })
  }
})
