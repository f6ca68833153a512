/**
 * The admin UI in real Chromium (issue 22): an operator signs in with a signed admin login URL
 * (HttpOnly, Secure session cookie; a pasted token works too), creates a rate limit through the
 * form (a client-side and a server-side validation message first), edits it, sees the request,
 * error and p95 charts of the proxied traffic and one recorded request with its response body;
 * publishes a connector version and migrates a connection to it with the task's progress, sets a
 * label, archives a connector with the task's progress, and searches. Screenshots go to
 * test/screenshots/ (git-ignored).
 */
import type { Page } from "playwright-core"
import { Agent, fetch as undiciFetch } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  type ConnectorBody,
  eventually,
  expectStatus,
  launch,
  resources,
  type Svc
} from "../support/Api.ts"
import { type ChromiumSession, launchChromium } from "../support/Chromium.ts"
import { adminLoginUrl, loginToken, marketplaceLoginUrl } from "../support/LoginUrls.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

let svc: Svc
let upstream: Upstream
let chromium: ChromiumSession
let page: Page
let adminOrigin: string
let ns: string
let connector: ConnectorBody
let connection: ConnectionBody
let doomed: ConnectorBody

const definition = (marker: string) => ({
  type: "demo",
  auth: { type: "none" },
  proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
  probes: [{ id: marker, url: `${upstream.origin}/ok` }]
})

/** A request with undici (no cookie jar, redirects not followed, the self-signed certificate accepted). */
const plain = async (url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
  const response = await undiciFetch(url, { ...init, redirect: "manual", dispatcher: insecure })
  const text = await response.text()
  let json: { code?: string } = {}
  try {
    json = text === "" ? {} : (JSON.parse(text) as { code?: string })
  } catch {
    json = {}
  }
  return { status: response.status, headers: response.headers, setCookies: response.headers.getSetCookie(), json }
}

const cookieFrom = (setCookies: ReadonlyArray<string>, name: string): string | undefined =>
  setCookies
    .find((c) => c.startsWith(`${name}=`))
    ?.split(";")[0]
    ?.slice(name.length + 1)

const insecure = new Agent({ connect: { rejectUnauthorized: false } })

const go = async (screen: string) => {
  await page.getByRole("link", { name: screen, exact: true }).click()
  await page.getByRole("heading", { name: screen, level: 1 }).waitFor()
}

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/ok", () => ({
    status: 200,
    headers: { "content-type": "application/json" },
    body: '{"hello":"ui"}'
  }))
  upstream.route("/fail", () => ({ status: 500, body: "upstream broke" }))
  svc = await launch("svc-e2e-ui-admin-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__appMetrics__requestEvents__fullRequestRecording: "always",
      SVC__admin_api__ui__initiate_session_url: "https://ops.example.test/svc/admin-session"
    }
  })
  adminOrigin = `https://127.0.0.1:${svc.ports.adminApi}`
  const r = resources(svc)
  ns = await r.freshNamespace("uiadmin")
  connector = await r.publishedConnector(ns, { name: "billing-api", definition: definition("v1") })
  connection = await r.connection(connector.id, { name: "acme-billing" })
  expectStatus(
    await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, { body: { definition: definition("v2") } }),
    201
  )
  doomed = await r.publishedConnector(ns, { name: "legacy-crm", definition: definition("legacy") })
  await r.connection(doomed.id, { name: "old-crm" })
  for (const path of ["/ok", "/ok", "/ok", "/fail"]) {
    expectStatus(
      await svc.call("POST", `/api/v1/connections/${connection.id}/_proxy`, {
        body: { url: `${upstream.origin}${path}`, method: "GET" }
      }),
      200
    )
  }
  // The events reach the app-metrics database through the buffer: wait for them.
  await eventually(
    async () =>
      expectStatus<{ items: ReadonlyArray<unknown> }>(
        await svc.call("GET", `/api/v1/metrics/request-events?connectionId=${connection.id}`),
        200
      ).items.length,
    (n) => n >= 4,
    30_000
  )
  chromium = await launchChromium()
  page = await chromium.context.newPage()
}, 180_000)

afterAll(async () => {
  await chromium?.close()
  await svc?.stop()
  await upstream?.close()
})

describe("admin UI (issue 22)", () => {
  it("signs in with a signed admin login URL; the session cookie is HttpOnly and Secure", async () => {
    const answer = await fetch(`http://127.0.0.1:${svc.ports.api}/ui/`)
    expect(answer.status).toBe(404) // the admin UI lives on the admin-api only
    await page.goto(await adminLoginUrl(svc, "admin"))
    await page.getByText("Signed in as admin").waitFor()
    expect(new URL(page.url()).pathname).toBe("/ui/")
    const cookies = await chromium.context.cookies(adminOrigin)
    const session = cookies.find((c) => c.name === "svc_admin_session")
    expect(session?.httpOnly).toBe(true)
    expect(session?.secure).toBe(true)
    expect(session?.sameSite).toBe("Strict")
    expect(cookies.find((c) => c.name === "svc_admin_xsrf")?.httpOnly).toBe(false)
    // The page is not framable and allows no inline script.
    const ui = await page.request.get(`${adminOrigin}/ui/`)
    expect(ui.headers()["content-security-policy"]).toContain("frame-ancestors 'none'")
    expect(ui.headers()["content-security-policy"]).not.toContain("unsafe-inline")
    // A write through the session without the XSRF header is refused.
    const cookieHeader = cookies.map((c) => `${c.name}=${c.value}`).join("; ")
    const refused = await page.request.post(`${adminOrigin}/api/v1/namespaces`, {
      headers: { cookie: cookieHeader, "content-type": "application/json" },
      data: { path: `${ns}.nope` }
    })
    expect(refused.status()).toBe(403)
    expect(((await refused.json()) as { code: string }).code).toBe("xsrf_token_invalid")
  })

  it("creates a rate limit with validation messages, edits it, and lists it", async () => {
    await go("Rate limits")
    await page.getByRole("button", { name: "New rate limit" }).click()
    const form = page.getByRole("form", { name: "New rate limit" })
    await form.getByLabel("Namespace", { exact: true }).fill(ns)
    await form.getByLabel("Limit").fill("0")
    await form.getByRole("button", { name: "Create rate limit" }).click()
    await form.getByText("A whole number greater than 0.").waitFor()
    expect(await form.getByLabel("Limit").getAttribute("aria-invalid")).toBe("true")
    await form.getByLabel("Limit").fill("100")
    await form.getByLabel("Name", { exact: true }).fill("per minute!")
    await form.getByRole("button", { name: "Create rate limit" }).click()
    // The server's 400 names the field; the message is shown beside it.
    await form.locator("#rl-name-error").waitFor()
    await chromium.shot(page, "admin-01-rate-limit-validation")
    await form.getByLabel("Name", { exact: true }).fill("per-minute")
    await form.getByLabel("Window").fill("1m")
    await form.getByLabel("Bucket dimensions").fill("connection")
    await form.getByLabel("Label selector").fill("tier=gold")
    await form.getByLabel("Labels (key=value, …)").fill("team=billing")
    await form.getByRole("button", { name: "Create rate limit" }).click()
    await page.getByRole("status").filter({ hasText: "Saved per-minute" }).waitFor()
    const created = expectStatus<{ items: ReadonlyArray<{ id: string; name: string; definition: unknown }> }>(
      await svc.call("GET", `/api/v1/rate-limits?namespace=${ns}`),
      200
    ).items.find((rule) => rule.name === "per-minute")
    expect(created?.definition).toMatchObject({
      mode: "enforce",
      selector: { label_selector: "tier=gold" },
      bucket: { dimensions: ["connection"] },
      algorithm: { fixed_window: { window: "1m", limit: 100 } }
    })

    await page.getByRole("button", { name: "Edit per-minute" }).click()
    const edit = page.getByRole("form", { name: "Edit rate limit" })
    await edit.getByLabel("Mode").selectOption("observe")
    await edit.getByLabel("Algorithm").selectOption("token_bucket")
    await edit.getByLabel("Capacity").fill("20")
    await edit.getByLabel("Refill rate (tokens/s)").fill("0.5")
    await edit.getByRole("button", { name: "Save rate limit" }).click()
    const row = page.locator(`tr[data-rate-limit-id="${created?.id}"]`)
    await expect.poll(() => row.textContent()).toContain("observe")
    expect(await row.textContent()).toContain("token_bucket capacity=20 refill_rate=0.5")
    expect(await row.getByTestId("label-selector").textContent()).toBe("tier=gold")
    await chromium.shot(page, "admin-02-rate-limits")
    expect(await chromium.axe(page)).toEqual([])

    // Delete, after a confirmation that Escape cancels.
    await page.getByRole("button", { name: "Delete per-minute" }).click()
    const dialog = page.getByRole("dialog")
    await dialog.getByText("Delete rate limit per-minute?").waitFor()
    await chromium.shot(page, "admin-02b-rate-limit-delete-confirm")
    await page.keyboard.press("Escape")
    await dialog.waitFor({ state: "hidden" })
    expect(await row.count()).toBe(1)
    await page.getByRole("button", { name: "Delete per-minute" }).click()
    await dialog.getByRole("button", { name: "Delete" }).click()
    await page.getByRole("status").filter({ hasText: "Deleted per-minute" }).waitFor()
    await expect.poll(() => row.count()).toBe(0)
    expect((await svc.call("GET", `/api/v1/rate-limits/${created?.id}`)).status).toBe(404)
  })

  it("charts requests, errors and p95 latency from the metrics query", async () => {
    await go("Metrics")
    await page.getByLabel("Namespace").fill(`${ns}.**`)
    await page.getByRole("button", { name: "Refresh" }).click()
    const requests = page.getByTestId("chart-requests")
    await expect.poll(() => requests.locator("svg").getAttribute("data-series")).toBe("1")
    await expect.poll(() => requests.locator("li").textContent()).toBe("billing-api")
    await expect.poll(() => requests.locator("summary").textContent()).toBe("Values (4 in total)")
    await expect
      .poll(() => page.getByTestId("chart-errors").locator("summary").textContent())
      .toBe("Values (1 in total)")
    expect(await page.getByTestId("chart-p95-latency").locator("svg circle").count()).toBeGreaterThan(0)
    await chromium.shot(page, "admin-03-metrics-charts")
  })

  it("filters request events and shows one recorded request with its response", async () => {
    await go("Request events")
    await page.getByLabel("Connection id").fill(connection.id)
    await page.getByLabel("Status range (200-299)").fill("200-299")
    await page.getByRole("button", { name: "Apply filters" }).click()
    const rows = page.getByTestId("request-events").locator("tbody tr")
    await expect.poll(() => rows.count()).toBe(3)
    await rows.first().getByRole("button").click()
    const recording = page.getByTestId("recording")
    await recording.waitFor()
    expect(await page.getByTestId("recording-response-body").textContent()).toContain('{"hello":"ui"}')
    await chromium.shot(page, "admin-04-request-event-recording")
  })

  it("publishes a version, migrates a connection with the task's progress, and sets a label", async () => {
    await go("Connectors")
    await page.getByRole("button", { name: "Open billing-api" }).click()
    const detail = page.getByTestId("connector-detail")
    // Disconnect all asks first, naming how many connections it disconnects; Cancel keeps them.
    await detail.getByRole("button", { name: "Disconnect all" }).click()
    const confirm = page.getByRole("dialog")
    await expect
      .poll(() => confirm.getByTestId("confirm-impact").textContent())
      .toContain("This disconnects 1 connection.")
    await chromium.shot(page, "admin-05a-disconnect-all-confirm")
    await confirm.getByRole("button", { name: "Cancel" }).click()
    await confirm.waitFor({ state: "hidden" })
    expect(expectStatus<ConnectionBody>(await svc.call("GET", `/api/v1/connections/${connection.id}`), 200).state).toBe(
      "configured"
    )

    // Publishing shows the diff against the primary version first.
    await detail.getByRole("button", { name: "Publish version 2" }).click()
    const diff = confirm.getByTestId("version-diff")
    await diff.waitFor()
    expect(await diff.locator(".svc-diff-remove").allTextContents()).toEqual(['-       "id": "v1",'])
    expect(await diff.locator(".svc-diff-add").allTextContents()).toEqual(['+       "id": "v2",'])
    await chromium.shot(page, "admin-05b-publish-diff")
    expect(await chromium.axe(page)).toEqual([])
    await confirm.getByRole("button", { name: "Publish version 2" }).click()
    // Publishing runs through the worker's task: generous on a loaded machine.
    await expect.poll(() => detail.locator("tbody tr").first().textContent(), { timeout: 30_000 }).toContain("primary")
    await chromium.shot(page, "admin-05-connector-versions")

    await go("Connections")
    await page.getByRole("button", { name: "Open acme-billing" }).click()
    const cxn = page.getByTestId("connection-detail")
    await cxn.getByLabel("Labels key").fill("tier")
    await cxn.getByLabel("Labels value").fill("gold")
    await cxn.getByRole("button", { name: "Set" }).first().click()
    await cxn.getByText("tier=gold").waitFor()
    await cxn.getByLabel("Target version").fill("2")
    await cxn.getByRole("button", { name: "Migrate" }).click()
    await expect.poll(() => cxn.getByTestId("task-state").textContent(), { timeout: 60_000 }).toBe("completed")
    await cxn.getByText(`${connector.id} v2`).waitFor()
    // The probes of its version, run on demand, with what the upstream answered.
    await cxn.getByRole("button", { name: "Run probe v2" }).click()
    const probe = cxn.locator('li[data-probe-id="v2"]')
    await expect.poll(() => probe.getByTestId("probe-outcome").textContent()).toBe("success")
    expect(await probe.textContent()).toContain("HTTP 200")
    await chromium.shot(page, "admin-06-connection-migrated")
    const after = expectStatus<ConnectionBody & { connectorVersion: number }>(
      await svc.call("GET", `/api/v1/connections/${connection.id}`),
      200
    )
    expect(after.connectorVersion).toBe(2)
    expect(after.labels.tier).toBe("gold")
  }, 90_000)

  it("archives a connector, showing the task's progress until it completes", async () => {
    await go("Connectors")
    await page.getByRole("button", { name: "Open legacy-crm" }).click()
    const detail = page.getByTestId("connector-detail")
    await detail.getByRole("button", { name: "Archive connector" }).click()
    const confirm = page.getByRole("dialog")
    await expect
      .poll(() => confirm.getByTestId("confirm-impact").textContent())
      .toContain("This disconnects 1 connection.")
    await chromium.shot(page, "admin-07a-archive-confirm")
    await confirm.getByRole("button", { name: "Archive connector" }).click()
    await expect.poll(() => detail.getByTestId("task-state").textContent(), { timeout: 60_000 }).toBe("completed")
    expect(await detail.locator("progress").count()).toBe(1)
    await expect.poll(() => detail.locator("tbody tr").first().textContent()).toContain("archived")
    await chromium.shot(page, "admin-07-connector-archived")
  }, 90_000)

  it("creates a connector from a YAML definition (the server's problems shown by path), then a version", async () => {
    await go("Connectors")
    await page.getByRole("button", { name: "New connector" }).click()
    const editor = page.getByRole("form", { name: "New connector" })
    await editor.getByLabel("Namespace", { exact: true }).fill(ns)
    await editor.getByLabel("Name", { exact: true }).fill("made-in-ui")
    const text = editor.getByLabel("Definition (YAML or JSON)")
    await text.fill(
      "type: made\ndisplay_name: Made in the UI\nauth:\n  type: bogus\nprobes:\n  - id: p\n    url: ftp://x\n"
    )
    await editor.getByRole("button", { name: "Create connector" }).click()
    const problems = editor.getByTestId("definition-problems")
    await problems.waitFor()
    const listed = await problems.locator("li").allTextContents()
    expect(listed.some((line) => line.startsWith("auth"))).toBe(true)
    expect(await text.getAttribute("aria-invalid")).toBe("true")
    await chromium.shot(page, "admin-09-definition-problems")
    expect(await chromium.axe(page)).toEqual([])
    await text.fill(
      `type: made\ndisplay_name: Made in the UI\nauth:\n  type: none\nproxy:\n  allowed_hosts: ["127.0.0.1:${upstream.port}"]\n  allow_private_networks: true\n`
    )
    await editor.getByRole("button", { name: "Create connector" }).click()
    const detail = page.getByTestId("connector-detail")
    await detail.getByText("Made in the UI").waitFor()
    const made = expectStatus<{ items: ReadonlyArray<ConnectorBody & { displayName?: string }> }>(
      await svc.call("GET", `/api/v1/connectors?namespace=${ns}&limit=100`),
      200
    ).items.find((c) => c.name === "made-in-ui")
    expect(made?.displayName).toBe("Made in the UI")

    // A new version starts from the latest definition (as JSON); publishing it shows the diff.
    await detail.getByRole("button", { name: "New version" }).click()
    const next = page.getByRole("form", { name: "New version of made-in-ui" })
    const draft = next.getByLabel("Definition (YAML or JSON)")
    expect(JSON.parse(await draft.inputValue())).toMatchObject({ type: "made", display_name: "Made in the UI" })
    await draft.fill((await draft.inputValue()).replace('"Made in the UI"', '"Made in the UI, v2"'))
    await next.getByRole("button", { name: "Save draft version" }).click()
    await detail.getByRole("button", { name: "Publish version 1" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Publish version 1" }).click()
    await expect.poll(() => detail.locator('tr[data-version="1"]').textContent()).toContain("primary")
    await detail.getByRole("button", { name: "Publish version 2" }).click()
    const diff = page.getByRole("dialog").getByTestId("version-diff")
    await diff.locator(".svc-diff-add").first().waitFor()
    expect(await diff.locator(".svc-diff-add").allTextContents()).toEqual(['+   "display_name": "Made in the UI, v2",'])
    await page.getByRole("dialog").getByRole("button", { name: "Publish version 2" }).click()
    await expect.poll(() => detail.locator('tr[data-version="2"]').textContent()).toContain("primary")
    await chromium.shot(page, "admin-10-connector-created")
  }, 90_000)

  it("lists actors and creates one (a bad permission line named first)", async () => {
    await go("Actors")
    await page.getByTestId("actors").getByText("admin", { exact: true }).waitFor()
    await page.getByRole("button", { name: "New actor" }).click()
    const form = page.getByRole("form", { name: "New actor" })
    const externalId = `ops-${Date.now().toString(36)}`
    await form.getByLabel("External id").fill(externalId)
    await form.getByLabel("Namespace", { exact: true }).fill(ns)
    const permissions = form.getByLabel("Permissions (one per line: namespace resources verbs)")
    await permissions.fill(`${ns} connections`)
    await form.getByRole("button", { name: "Create actor" }).click()
    await form.getByText("Line 1: write <namespace> <resources> <verbs>.").waitFor()
    expect(await permissions.getAttribute("aria-invalid")).toBe("true")
    await chromium.shot(page, "admin-11-actor-validation")
    await permissions.fill(`${ns} connections,notifications get,list`)
    await form.getByRole("button", { name: "Create actor" }).click()
    await page
      .getByRole("status")
      .filter({ hasText: `Created ${externalId}` })
      .waitFor()
    await page.getByTestId("actors").getByText(externalId).waitFor()
    await chromium.shot(page, "admin-12-actors")
    expect(await chromium.axe(page)).toEqual([])
    const actors = expectStatus<{ items: ReadonlyArray<{ externalId: string; permissions: unknown }> }>(
      await svc.call("GET", "/api/v1/actors?limit=100"),
      200
    ).items
    expect(actors.find((a) => a.externalId === externalId)?.permissions).toEqual([
      { namespace: ns, resources: ["connections", "notifications"], verbs: ["get", "list"] }
    ])
  })

  it("searches resources by name", async () => {
    await go("Search")
    await page.getByLabel("Name or label value").fill("acme-billing")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await page.getByTestId("search-results").getByText(connection.id).waitFor()
    await chromium.shot(page, "admin-08-search")
    expect(await chromium.axe(page)).toEqual([])
  })

  describe("admin UI sessions over HTTP", () => {
    it("sends an operator without a token to admin_api.ui.initiate_session_url", async () => {
      const answer = await plain(`${adminOrigin}/ui/login`)
      expect(answer.status).toBe(302)
      const location = new URL(answer.headers.get("location") ?? "")
      expect(location.origin + location.pathname).toBe("https://ops.example.test/svc/admin-session")
      expect(location.searchParams.get("return_to")).toBe("/ui/")
    })

    it("refuses a login link without a nonce, and a pasted token that is not JSON", async () => {
      const noNonce = await loginToken(svc, "admin", "admin-api", { nonce: false })
      const refused = await plain(`${adminOrigin}/ui/login?token=${noNonce}`)
      expect(refused.status).toBe(303)
      expect(refused.headers.get("location")).toBe("/ui/?login_error=login_token_without_nonce")
      expect(refused.setCookies).toEqual([])
      const form = await plain(`${adminOrigin}/ui/session`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `token=${svc.adminToken}`
      })
      expect(form.status).toBe(415)
      expect(form.json.code).toBe("unsupported_media_type")
    })

    it("turns a pasted token into a session; a marketplace session is never an admin session", async () => {
      const started = await plain(`${adminOrigin}/ui/session`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token: svc.adminToken })
      })
      expect(started.status).toBe(204)
      expect(started.setCookies.find((c) => c.startsWith("svc_admin_session="))).toMatch(
        /HttpOnly; Secure; SameSite=Strict/
      )
      const adminCookie = cookieFrom(started.setCookies, "svc_admin_session")
      const whoami = await plain(`${adminOrigin}/api/v1/auth/whoami`, {
        headers: { cookie: `svc_admin_session=${adminCookie}` }
      })
      expect(whoami.status).toBe(200)

      // A marketplace login (public service) for the same actor: its session id is refused on the admin-api.
      const login = await plain(await marketplaceLoginUrl(svc, "admin", "/connect/"))
      const publicSession = cookieFrom(login.setCookies, "svc_session")
      expect(publicSession).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const crossed = await plain(`${adminOrigin}/api/v1/auth/whoami`, {
        headers: { cookie: `svc_admin_session=${publicSession}` }
      })
      expect(crossed.status).toBe(401)
      expect(crossed.json.code).toBe("session_required")
      // Logging out needs the XSRF header, then ends the session.
      const xsrf = cookieFrom(started.setCookies, "svc_admin_xsrf")
      const both = `svc_admin_session=${adminCookie}; svc_admin_xsrf=${xsrf}`
      const noHeader = await plain(`${adminOrigin}/ui/logout`, { method: "POST", headers: { cookie: both } })
      expect(noHeader.status).toBe(403)
      const out = await plain(`${adminOrigin}/ui/logout`, {
        method: "POST",
        headers: { cookie: both, "x-xsrf-token": xsrf ?? "" }
      })
      expect(out.status).toBe(204)
      expect(out.setCookies.some((c) => c.startsWith("svc_admin_session=;") && c.includes("Max-Age=0"))).toBe(true)
      const gone = await plain(`${adminOrigin}/api/v1/auth/whoami`, { headers: { cookie: both } })
      expect(gone.status).toBe(401)
      // Neither a token nor a cookie: the admin-api answers as it always did.
      const bare = await plain(`${adminOrigin}/api/v1/auth/whoami`)
      expect(bare.status).toBe(401)
      expect(bare.json.code).toBe("unauthorized")
    })
  })

  it("logged no uncaught exception and no console error beyond the deliberate 400s", () => {
    // Chromium logs every non-2xx fetch: the refused rate limit and the refused definition are expected.
    const deliberate = (text: string) =>
      text.includes("status of 400") && (text.includes("/api/v1/rate-limits") || text.endsWith("/api/v1/connectors)"))
    const problems = chromium.problems([adminOrigin]).filter((p) => !(p.kind === "console" && deliberate(p.text)))
    expect(problems).toEqual([])
  })
})
