/**
 * The Connect UI in real Chromium (issue 22), embedded the way a host application embeds it: the
 * sample host app of `examples/host-app` signs a marketplace login URL for its user and shows the
 * Connect UI in an iframe. Through that iframe the user connects an OAuth2 account (the
 * oidc-provider's own login and consent pages in a popup, then the verify probe), the host page
 * receives the completion message; connects an API-key account through forms rendered from the
 * steps' JSON Schemas (client-side errors, masked secret, enum/number/boolean controls) and
 * disconnects it after a confirmation that Escape cancels; acts on a re-authentication notice.
 * A user without `connections:update` sees the notice without its action. No page of svc logs a
 * console error. Screenshots go to test/screenshots/ (git-ignored).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import type { Frame, FrameLocator, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConnectionBody, expectStatus, launch, rand, resources, type Svc } from "../support/Api.ts"
import { type ChromiumSession, launchChromium } from "../support/Chromium.ts"
import { marketplaceLoginUrl } from "../support/LoginUrls.ts"
import { authorizationCodeAuth, type OAuthProvider, startOAuthProvider } from "../support/OAuthProvider.ts"
import { freePort, repoRoot } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const clientSecret = `secret-${randomBytes(16).toString("hex")}`

let provider: OAuthProvider
let upstream: Upstream
let svc: Svc
let chromium: ChromiumSession
let hostApp: ChildProcess | undefined
/** A second host app on an origin that is not allowed. */
let strayHostApp: ChildProcess | undefined
let hostOrigin: string
let publicOrigin: string
let tenantNs: string
let oauthConnector: { id: string; name: string }
let formsConnector: { id: string; name: string }
/** Serves the forms connector's logo over https (the admin-api's self-signed certificate). */
let logoServer: https.Server | undefined
let logoUrl: string
const oauthDisplay = "Acme Cloud"
const formsDisplay = "Ticket Desk"
const user = `ui-user-${rand()}`
const viewer = `ui-viewer-${rand()}`

/** Starts `examples/host-app/server.js` for `externalId` on `port`; resolves once it listens. */
const startHostApp = (port: number, externalId: string): Promise<ChildProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, "examples/host-app/server.js")], {
      cwd: repoRoot,
      env: {
        ...process.env,
        PORT: String(port),
        SVC_PUBLIC_URL: publicOrigin,
        SVC_SIGNING_KEY: path.join(svc.dir ?? "", ".svc/dev-keys/jwt-private.pem"),
        HOST_APP_USER: externalId
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (output.includes("host app for")) resolve(child)
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    child.once("exit", (code) => reject(new Error(`host app exited with ${code}: ${output}`)))
  })

const connectFrame = (page: Page): FrameLocator => page.frameLocator("iframe#svc-connect")

/** The Connect UI's frame in the host app's page (for axe-core). */
const svcFrame = (page: Page): Frame => {
  const frame = page.frames().find((f) => f.url().startsWith(`${publicOrigin}/connect/`))
  if (frame === undefined) throw new Error(`no Connect UI frame in ${page.url()}`)
  return frame
}

/** Settles when `page` is closed, including when it already was; fails after `timeoutMs`. */
const whenClosed = (page: Page, timeoutMs: number): Promise<void> =>
  page.isClosed()
    ? Promise.resolve()
    : page.waitForEvent("close", { timeout: timeoutMs }).then(
        () => undefined,
        (error: unknown) => {
          if (!page.isClosed()) throw error
        }
      )

/** Walks the provider's login and consent pages in `popup` until it closes itself. */
const signInAtProvider = async (popup: Page, shotName?: string) => {
  // With a provider session and a grant left by an earlier test, the popup can run its whole
  // redirect chain and close itself before this function is even called.
  const closed = whenClosed(popup, 30_000)
  for (let forms = 0; forms < 4 && !popup.isClosed(); forms++) {
    const submit = popup.locator('button[type="submit"], button.login-submit').first()
    const outcome = await Promise.race([
      closed.then(() => "closed" as const),
      submit.waitFor({ timeout: 20_000 }).then(() => "form" as const)
    ])
    if (outcome === "closed") break
    const login = popup.locator('input[name="login"]')
    if ((await login.count()) > 0) {
      await login.fill("alice")
      await popup.locator('input[name="password"]').fill("password")
      if (shotName !== undefined && forms === 0) await chromium.shot(popup, shotName)
    }
    // the last form's answer closes the popup, possibly before the click call returns
    await submit.click().catch((error: unknown) => {
      if (!popup.isClosed()) throw error
    })
  }
  await closed
}

/**
 * Clicks a button that closes its own window: the window may be gone before the click call
 * returns, which is the click succeeding, not failing.
 */
const clickToClose = async (target: Page, name: string) => {
  const closed = whenClosed(target, 30_000)
  await target
    .getByRole("button", { name })
    .click()
    .catch((error: unknown) => {
      if (!target.isClosed()) throw error
    })
  await closed
}

const hostEvents = async (page: Page): Promise<ReadonlyArray<Record<string, unknown>>> =>
  ((await page.locator("#events").textContent()) ?? "")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>)

const connectionsOf = async (connectorId: string) =>
  expectStatus<{ items: ReadonlyArray<ConnectionBody> }>(
    await svc.call("GET", `/api/v1/connections?namespace=${tenantNs}&limit=100`),
    200
  ).items.filter((c) => c.connectorId === connectorId)

beforeAll(async () => {
  provider = await startOAuthProvider({ accessTokenTtl: 3600 })
  upstream = await startUpstream()
  upstream.route("/verify", (request) =>
    request.headers.authorization === "Bearer key-123" ? { status: 200, body: "{}" } : { status: 401 }
  )
  const hostPort = await freePort()
  hostOrigin = `http://127.0.0.1:${hostPort}`
  svc = await launch("svc-e2e-ui-connect-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__host_application__allowed_origins: `["${hostOrigin}"]`,
      SVC__oauth2__clients: `[{client_id: svc-web, client_secret: {value: "${clientSecret}"}}]`
    }
  })
  publicOrigin = `http://127.0.0.1:${svc.ports.public}`
  const tlsDir = path.join(svc.dir ?? "", ".svc/tls")
  logoServer = https.createServer(
    {
      cert: fs.readFileSync(path.join(tlsDir, "admin-api.crt")),
      key: fs.readFileSync(path.join(tlsDir, "admin-api.key"))
    },
    (_request, response) => {
      response
        .writeHead(200, { "content-type": "image/svg+xml" })
        .end(
          '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" rx="6" fill="#1f8a70"/><path d="M8 16h16M16 8v16" stroke="#fff" stroke-width="4"/></svg>'
        )
    }
  )
  await new Promise<void>((resolve) => logoServer?.listen(0, "127.0.0.1", resolve))
  logoUrl = `https://127.0.0.1:${(logoServer.address() as AddressInfo).port}/logo.svg`
  await provider.addClient({
    client_id: "svc-web",
    client_secret: clientSecret,
    token_endpoint_auth_method: "client_secret_basic",
    redirect_uris: [`${publicOrigin}/oauth2/callback`],
    grant_types: ["authorization_code", "refresh_token"],
    scope: "openid offline_access read write"
  })
  const r = resources(svc)
  const ns = await r.freshNamespace("ui")
  tenantNs = (await r.namespace(`${ns}.acme`)).path
  const oauth = await r.publishedConnector(ns, {
    name: "acme-cloud",
    definition: {
      type: "provider",
      display_name: oauthDisplay,
      description: "Files and projects in your Acme Cloud workspace.",
      auth: authorizationCodeAuth(provider, [{ name: "read", required: true }, { name: "write" }]),
      proxy: { allowed_hosts: [new URL(provider.issuer).host], allow_private_networks: true },
      probes: [{ id: "me", url: provider.endpoints.resource("me"), verify: true }]
    }
  })
  oauthConnector = { id: oauth.id, name: oauth.name }
  const forms = await r.publishedConnector(ns, {
    name: "ticket-desk",
    definition: {
      type: "forms",
      display_name: formsDisplay,
      description: "Tickets and queues of your help desk.",
      logo_url: logoUrl,
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
      probes: [{ id: "check", url: `${upstream.origin}/verify/{{cfg.tenant}}`, verify: true }],
      setup_flow: {
        preconnect: {
          steps: [
            {
              id: "tenant",
              json_schema: {
                type: "object",
                title: "Your workspace",
                properties: { tenant: { type: "string", title: "Workspace", minLength: 2 } },
                required: ["tenant"]
              }
            }
          ]
        },
        configure: {
          steps: [
            {
              id: "options",
              json_schema: {
                type: "object",
                properties: {
                  region: { type: "string", title: "Region", enum: ["eu", "us"] },
                  max_items: { type: "integer", title: "Items per sync", minimum: 1, maximum: 500, default: 50 },
                  sync_archived: { type: "boolean", title: "Sync archived tickets" }
                },
                required: ["region"]
              }
            }
          ]
        }
      }
    }
  })
  formsConnector = { id: forms.id, name: forms.name }
  const readConnectors = { namespace: ns, resources: ["connectors"], verbs: ["get", "list"] }
  const tasks = { namespace: "root.**", resources: ["tasks"], verbs: ["get"] }
  await r.create("actors", {
    externalId: user,
    namespace: "root",
    permissions: [
      readConnectors,
      tasks,
      { namespace: tenantNs, resources: ["connections"], verbs: ["create", "get", "list", "update", "disconnect"] },
      { namespace: tenantNs, resources: ["notifications"], verbs: ["list", "update"] }
    ]
  })
  await r.create("actors", {
    externalId: viewer,
    namespace: "root",
    permissions: [
      readConnectors,
      { namespace: tenantNs, resources: ["connections"], verbs: ["get", "list"] },
      { namespace: tenantNs, resources: ["notifications"], verbs: ["list"] }
    ]
  })
  hostApp = await startHostApp(hostPort, user)
  chromium = await launchChromium()
}, 180_000)

afterAll(async () => {
  await chromium?.close()
  hostApp?.kill()
  strayHostApp?.kill()
  await svc?.stop()
  await new Promise((resolve) => (logoServer === undefined ? resolve(undefined) : logoServer.close(resolve)))
  await upstream?.close()
  await provider?.close()
})

describe("Connect UI (issue 22)", () => {
  it("serves the page with a strict CSP, framable only by the host, and immutable hashed assets", async () => {
    const page = await fetch(`${publicOrigin}/connect/`)
    expect(page.status).toBe(200)
    expect(page.headers.get("cache-control")).toBe("no-cache")
    const csp = page.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("style-src 'self'")
    expect(csp).not.toContain("unsafe-inline")
    expect(csp).toContain(`frame-ancestors ${hostOrigin}`)
    expect(page.headers.get("x-frame-options")).toBeNull()
    const html = await page.text()
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    const script = /src="(\/connect\/assets\/[^"]+\.js)"/.exec(html)?.[1]
    expect(script).toBeDefined()
    const asset = await fetch(`${publicOrigin}${script}`)
    expect(asset.status).toBe(200)
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    expect((await fetch(`${publicOrigin}/connect/assets/nothing.js`)).status).toBe(404)
    const config = (await (await fetch(`${publicOrigin}/connect/config.json`)).json()) as { hostOrigins: Array<string> }
    expect(config.hostOrigins).toEqual([hostOrigin])
  })

  it("connects an OAuth2 account from the host app's iframe; the host receives the completion message", async () => {
    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    const frame = connectFrame(page)
    await frame.getByRole("heading", { name: "Connect an account" }).waitFor()
    await expect.poll(() => frame.getByRole("button", { name: `Connect ${oauthDisplay}`, exact: true }).count()).toBe(1)
    // Connectors by display name, description and logo (an initial when there is none); ids folded away.
    const forms = frame.locator(`li[data-connector-id="${formsConnector.id}"]`)
    expect(await forms.locator(".svc-name").textContent()).toBe(formsDisplay)
    expect(await forms.textContent()).toContain("Tickets and queues of your help desk.")
    expect(await forms.locator("img.svc-logo").getAttribute("src")).toBe(logoUrl)
    const oauth = frame.locator(`li[data-connector-id="${oauthConnector.id}"]`)
    expect(await oauth.locator(".svc-logo-initial").textContent()).toBe("A")
    expect(await oauth.locator("details .svc-mono").isVisible()).toBe(false)
    await chromium.shot(page, "connect-01-host-app-connectors")
    expect(await chromium.axe(svcFrame(page))).toEqual([])

    // The session cookie is HttpOnly; the XSRF cookie is readable; a write without the header is refused.
    const cookies = await chromium.context.cookies(publicOrigin)
    expect(cookies.find((c) => c.name === "svc_session")?.httpOnly).toBe(true)
    expect(cookies.find((c) => c.name === "XSRF-TOKEN")?.httpOnly).toBe(false)
    const cookieHeader = cookies.map((c) => `${c.name}=${c.value}`).join("; ")
    const write = (headers: Record<string, string>) =>
      fetch(`${publicOrigin}/api/v1/connections/_initiate`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: cookieHeader, ...headers },
        body: JSON.stringify({ connectorId: oauthConnector.id })
      })
    const withoutXsrf = await write({})
    expect(withoutXsrf.status).toBe(403)
    expect(((await withoutXsrf.json()) as { code: string }).code).toBe("xsrf_token_invalid")

    await frame.getByRole("button", { name: `Connect ${oauthDisplay}`, exact: true }).click()
    await frame.getByRole("heading", { name: `Connect ${oauthDisplay}`, exact: true }).waitFor()
    await chromium.shot(page, "connect-02-oauth-continue")
    const popupOpened = chromium.context.waitForEvent("page")
    await frame.getByRole("button", { name: "Continue to sign in" }).click()
    const popup = await popupOpened
    await signInAtProvider(popup, "connect-03-provider-login-popup")

    await frame.getByTestId("flash").filter({ hasText: "is connected" }).waitFor()
    await expect.poll(async () => (await hostEvents(page)).map((e) => e.type)).toContain("svc:connect:completed")
    const completed = (await hostEvents(page)).find((e) => e.type === "svc:connect:completed")
    expect(completed?.connectorId).toBe(oauthConnector.id)
    expect(completed?.state).toBe("configured")
    const [connection] = await connectionsOf(oauthConnector.id)
    expect(connection?.id).toBe(completed?.connectionId)
    expect(connection?.state).toBe("configured")
    expect(connection?.namespace).toBe(tenantNs)
    const row = frame.locator(`li[data-connection-id="${connection?.id}"]`)
    await expect.poll(() => row.getByTestId("connection-state").getAttribute("data-value")).toBe("configured")
    await expect.poll(() => row.getByTestId("connection-health").getAttribute("data-value")).toBe("healthy")
    await chromium.shot(page, "connect-04-oauth-connected")
    await page.close()
  }, 120_000)

  it("connects an API-key account through the setup forms, then disconnects it after confirming", async () => {
    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    const frame = connectFrame(page)
    await frame.getByRole("button", { name: `Connect ${formsDisplay}`, exact: true }).click()

    // Preconnect: a required text field, checked before anything is sent.
    const workspace = frame.getByLabel("Workspace")
    await workspace.waitFor()
    await frame.getByRole("button", { name: "Continue" }).click()
    await expect.poll(() => frame.getByRole("alert").first().textContent()).toContain("This field is required.")
    await expect.poll(() => workspace.getAttribute("aria-invalid")).toBe("true")
    await chromium.shot(page, "connect-05-form-validation")
    await workspace.fill("a")
    await frame.getByRole("button", { name: "Continue" }).click()
    await expect.poll(() => frame.getByRole("alert").first().textContent()).toContain("At least 2 characters.")
    // Keyboard only: type into the labelled field and submit with Enter.
    await workspace.focus()
    await page.keyboard.press("End")
    await page.keyboard.type("cme")
    await page.keyboard.press("Enter")

    // Credentials: the API key is a masked input. The user mistypes it.
    const apiKey = frame.getByLabel("API key")
    await apiKey.waitFor()
    expect(await apiKey.getAttribute("type")).toBe("password")
    await apiKey.fill("key-mistyped")
    await chromium.shot(page, "connect-06-api-key-masked")
    await frame.getByRole("button", { name: "Connect", exact: true }).click()

    // Configure: an enum select, an integer with its default, a boolean checkbox.
    const region = frame.getByLabel("Region")
    await region.waitFor()
    expect(await frame.getByLabel("Items per sync").inputValue()).toBe("50")
    await frame.getByLabel("Items per sync").fill("900")
    await region.selectOption("eu")
    await frame.getByLabel("Sync archived tickets").check()
    await frame.getByRole("button", { name: "Continue" }).click()
    await expect.poll(() => frame.getByRole("alert").first().textContent()).toContain("At most 500.")
    await frame.getByLabel("Items per sync").fill("120")
    await chromium.shot(page, "connect-07-configure-form")
    // The provider refuses the mistyped key: the verify step (after the last form) fails with an
    // end-user message (no probe id, address or socket error) and offers to edit what was entered.
    await frame.getByRole("button", { name: "Continue" }).click()
    await expect
      .poll(() => frame.getByTestId("setup-error").textContent())
      .toContain("The connection could not be verified with the provider.")
    const problem = (await frame.getByTestId("setup-error").textContent()) ?? ""
    expect(await frame.getByTestId("setup-error").locator("li").allTextContents()).toEqual([
      "The provider did not accept these credentials."
    ])
    expect(problem).not.toContain("127.0.0.1")
    expect(problem).not.toContain("HTTP 401")
    const editCredentials = frame.getByRole("button", { name: "Edit credentials" })
    await editCredentials.waitFor()
    await chromium.shot(page, "connect-08-verify-failed")
    expect(await chromium.axe(svcFrame(page))).toEqual([])

    // Editing a non-secret step shows the values entered; Back returns to the check.
    await frame.getByRole("button", { name: "Edit your workspace" }).click()
    expect(await frame.getByLabel("Workspace").inputValue()).toBe("acme")
    await frame.getByRole("button", { name: "Back" }).click()
    // Edit credentials: the secret is entered again (never kept in the page), then checked again.
    await editCredentials.click()
    const again = frame.getByLabel("API key")
    await again.waitFor()
    expect(await again.inputValue()).toBe("")
    expect(await again.getAttribute("type")).toBe("password")
    await again.fill("key-123")
    await chromium.shot(page, "connect-08b-edit-credentials")
    await frame.getByRole("button", { name: "Save and check again" }).click()

    await frame
      .getByTestId("flash")
      .filter({ hasText: `${formsDisplay} is connected.` })
      .waitFor()
    const [connection] = await connectionsOf(formsConnector.id)
    expect(connection?.state).toBe("configured")
    expect(connection?.configuration).toEqual({ tenant: "acme", region: "eu", max_items: 120, sync_archived: true })
    const verified = upstream.seen().filter((request) => request.path === "/verify/acme")
    expect(verified.map((request) => request.headers.authorization)).toEqual(["Bearer key-mistyped", "Bearer key-123"])
    await expect.poll(async () => (await hostEvents(page)).map((e) => e.connectionId)).toContain(connection?.id)

    // The connection is listed by its connector's display name and logo; ids only under Details.
    const row = frame.locator(`li[data-connection-id="${connection?.id}"]`)
    expect(await row.locator(".svc-name").textContent()).toBe(formsDisplay)
    expect(await row.locator("img.svc-logo").getAttribute("src")).toBe(logoUrl)
    await expect
      .poll(() =>
        row.locator("img.svc-logo").evaluate((img: unknown) => (img as { naturalWidth: number }).naturalWidth)
      )
      .toBe(32)
    expect(await row.locator("details").isVisible()).toBe(true)
    expect(await row.locator("details .svc-mono").isVisible()).toBe(false)
    expect(await row.locator("details .svc-mono").textContent()).toContain(connection?.id ?? "?")
    await expect.poll(() => row.getByTestId("connection-state").textContent()).toBe("Connected")
    await chromium.shot(page, "connect-08c-connected-with-logo")
    expect(await chromium.axe(svcFrame(page))).toEqual([])

    // Disconnect: a modal confirmation; Escape cancels it, the button confirms.
    const disconnect = frame.getByRole("button", { name: `Disconnect ${formsDisplay}` })
    await disconnect.click()
    const dialog = frame.getByRole("dialog")
    await dialog.waitFor()
    await chromium.shot(page, "connect-09-disconnect-confirm")
    await page.keyboard.press("Escape")
    await dialog.waitFor({ state: "hidden" })
    expect((await connectionsOf(formsConnector.id)).length).toBe(1)
    await disconnect.click()
    await dialog.getByRole("button", { name: "Disconnect" }).click()
    await frame.getByTestId("flash").filter({ hasText: "is disconnected" }).waitFor({ timeout: 60_000 })
    await expect.poll(() => connectionsOf(formsConnector.id).then((items) => items.length)).toBe(0)
    await expect.poll(async () => (await hostEvents(page)).map((e) => e.type)).toContain("svc:connect:disconnected")
    await page.close()
  }, 120_000)

  it("offers Edit credentials for a failed verification resumed in a new browser session, non-secret values kept", async () => {
    // Session one (a browser context of its own): the forms answered, the key mistyped, the check fails.
    const first = await chromium.browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1100, height: 800 } })
    try {
      const page = await first.newPage()
      await page.goto(hostOrigin)
      const frame = connectFrame(page)
      await frame.getByRole("button", { name: `Connect ${formsDisplay}`, exact: true }).click()
      await frame.getByLabel("Workspace").fill("globex")
      await frame.getByRole("button", { name: "Continue" }).click()
      await frame.getByLabel("API key").fill("key-wrong")
      await frame.getByRole("button", { name: "Connect", exact: true }).click()
      await frame.getByLabel("Region").selectOption("us")
      await frame.getByRole("button", { name: "Continue" }).click()
      await frame.getByRole("button", { name: "Edit credentials" }).waitFor()
    } finally {
      await first.close()
    }
    const [pending] = (await connectionsOf(formsConnector.id)).filter((c) => c.state === "setup")
    expect(pending?.setupStepId).toBe("svc:verify")

    // Session two: a new login, a new page; the setup is resumed from the list.
    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    const frame = connectFrame(page)
    const row = frame.locator(`li[data-connection-id="${pending?.id}"]`)
    await row.getByRole("button", { name: "Resume setup" }).click()
    const editCredentials = frame.getByRole("button", { name: "Edit credentials" })
    await editCredentials.waitFor()
    expect(await frame.getByRole("button", { name: "Edit your workspace" }).count()).toBe(1)
    expect(await frame.getByRole("button", { name: "Edit settings" }).count()).toBe(1)
    expect(await frame.getByRole("button", { name: "Check again" }).count()).toBe(1)
    await chromium.shot(page, "connect-08d-resumed-verify")
    expect(await chromium.axe(svcFrame(page))).toEqual([])
    // The stored non-secret values come back from the server; the key does not.
    await frame.getByRole("button", { name: "Edit settings" }).click()
    expect(await frame.getByLabel("Region").inputValue()).toBe("us")
    expect(await frame.getByLabel("Items per sync").inputValue()).toBe("50")
    await frame.getByRole("button", { name: "Back" }).click()
    await frame.getByRole("button", { name: "Edit your workspace" }).click()
    expect(await frame.getByLabel("Workspace").inputValue()).toBe("globex")
    await frame.getByRole("button", { name: "Back" }).click()
    await editCredentials.click()
    const apiKey = frame.getByLabel("API key")
    await apiKey.waitFor()
    expect(await apiKey.inputValue()).toBe("")
    await apiKey.fill("key-123")
    await chromium.shot(page, "connect-08e-resumed-edit-credentials")
    await frame.getByRole("button", { name: "Save and check again" }).click()
    await frame
      .getByTestId("flash")
      .filter({ hasText: `${formsDisplay} is connected.` })
      .waitFor()
    const done = (await connectionsOf(formsConnector.id)).find((c) => c.id === pending?.id)
    expect(done?.state).toBe("configured")
    expect(done?.configuration).toEqual({ tenant: "globex", region: "us", max_items: 50, sync_archived: false })
    expect(
      upstream
        .seen()
        .filter((request) => request.path === "/verify/globex")
        .map((request) => request.headers.authorization)
    ).toEqual(["Bearer key-wrong", "Bearer key-123"])
    await page.close()
  }, 120_000)

  it("shows a re-authentication notice with its action only when can_action, and acting on it heals the connection", async () => {
    const [connection] = await connectionsOf(oauthConnector.id)
    expect(connection).toBeDefined()
    const id = connection?.id ?? ""
    provider.revokeAll("refresh_token")
    provider.revokeAll("access_token")
    const proxied = expectStatus<{ statusCode: number }>(
      await svc.call("POST", `/api/v1/connections/${id}/_proxy`, {
        body: { method: "GET", url: provider.endpoints.resource("me") }
      }),
      200
    )
    expect(proxied.statusCode).toBe(401)
    expect(
      expectStatus<ConnectionBody & { healthState: string }>(await svc.call("GET", `/api/v1/connections/${id}`), 200)
        .healthState
    ).toBe("unhealthy")

    // A viewer without connections:update sees the notice but no action (the Connect UI opened
    // directly, not embedded, with a login URL signed here).
    const viewerPage = await chromium.context.newPage()
    await viewerPage.goto(await marketplaceLoginUrl(svc, viewer, "/connect/"))
    const notices = viewerPage.getByTestId("notifications")
    await notices.waitFor()
    expect(await notices.locator("li").count()).toBeGreaterThan(0)
    expect(await viewerPage.getByRole("button", { name: "Reconnect" }).count()).toBe(0)
    await chromium.shot(viewerPage, "connect-10-notice-without-permission")
    await viewerPage.close()

    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    const frame = connectFrame(page)
    const row = frame.locator(`li[data-connection-id="${id}"]`)
    await expect.poll(() => row.getByTestId("connection-health").getAttribute("data-value")).toBe("unhealthy")
    const reconnect = frame.getByRole("button", { name: "Reconnect" })
    await reconnect.waitFor()
    await chromium.shot(page, "connect-11-reauth-notice")
    await reconnect.click()
    const popupOpened = chromium.context.waitForEvent("page")
    await frame.getByRole("button", { name: "Continue to sign in" }).click()
    await signInAtProvider(await popupOpened)
    await frame.getByTestId("flash").filter({ hasText: "is connected" }).waitFor()
    await expect.poll(() => row.getByTestId("connection-health").getAttribute("data-value")).toBe("healthy")
    expect(await frame.getByRole("button", { name: "Reconnect" }).count()).toBe(0)
    await chromium.shot(page, "connect-12-reauth-done")
    await page.close()
  }, 120_000)

  it("runs in a popup the host opened: messages go to the opener's allowed origin only; the theme comes from the URL", async () => {
    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    await connectFrame(page).getByRole("heading", { name: "Connected accounts" }).waitFor()
    let popups = 0
    const openPopup = async (query: string, heading = "Connected accounts") => {
      const url = await marketplaceLoginUrl(svc, user, `/connect/?${query}`)
      const opened = chromium.context.waitForEvent("page")
      // Browser-side code as strings: this project's TypeScript has no DOM types.
      // A new window name each time: a closing window of the same name would be reused.
      popups++
      await page.evaluate(
        `void window.open(${JSON.stringify(url)}, "svc-connect-popup-${popups}", "popup,width=720,height=720")`
      )
      const popup = await opened
      await popup.getByRole("heading", { name: heading }).waitFor()
      return popup
    }

    // A host_origin that is not allowed: no session, the error page, and the opener (on an allowed
    // origin, but not the one named) gets nothing.
    const before = (await hostEvents(page)).length
    const stray = await openPopup(
      `host_origin=${encodeURIComponent("https://evil.example.test")}`,
      "This application may not show this page"
    )
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect((await hostEvents(page)).length).toBe(before)
    await stray.close()

    const popup = await openPopup(
      `host_origin=${encodeURIComponent(hostOrigin)}&theme=dark&accent=${encodeURIComponent("#d6452f")}&radius=2`
    )
    await popup.getByRole("button", { name: `Connect ${formsDisplay}`, exact: true }).waitFor()
    const style = (property: string) =>
      popup.evaluate(
        `getComputedStyle(document.querySelector(${JSON.stringify(`button[aria-label="Connect ${formsDisplay}"]`)}))[${JSON.stringify(property)}]`
      )
    expect(await style("backgroundColor")).toBe("rgb(214, 69, 47)")
    expect(await style("borderTopLeftRadius")).toBe("2px")
    expect(await popup.evaluate("document.documentElement.dataset.theme")).toBe("dark")
    await chromium.shot(popup, "connect-13-popup-dark-theme")
    await clickToClose(popup, "Close")
    await expect.poll(async () => (await hostEvents(page)).map((e) => e.type)).toContain("svc:connect:close")
    await page.close()
  })

  it("lists an unfinished setup as such, never as healthy, and removes it after confirming", async () => {
    const started = expectStatus<{ connection: { id: string } }>(
      await svc.call("POST", "/api/v1/connections/_initiate", {
        token: await svc.sign(user),
        body: { connectorId: formsConnector.id }
      }),
      201
    )
    const id = started.connection.id
    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    const frame = connectFrame(page)
    const row = frame.locator(`li[data-connection-id="${id}"]`)
    await expect.poll(() => row.getByTestId("connection-state").getAttribute("data-value")).toBe("setup")
    expect(await row.getByTestId("connection-state").textContent()).toBe("Setup not finished")
    expect(await row.getByTestId("connection-health").count()).toBe(0)
    expect(await row.getByRole("button", { name: "Resume setup" }).count()).toBe(1)
    await chromium.shot(page, "connect-14b-unfinished-setup")
    expect(await chromium.axe(svcFrame(page))).toEqual([])
    await row.getByRole("button", { name: `Remove ${formsDisplay}` }).click()
    const dialog = frame.getByRole("dialog")
    await dialog.getByText(`Remove the unfinished ${formsDisplay} setup?`).waitFor()
    await dialog.getByRole("button", { name: "Remove" }).click()
    await expect
      .poll(() => connectionsOf(formsConnector.id).then((items) => items.some((c) => c.id === id)))
      .toBe(false)
    await page.close()
  }, 120_000)

  it("shows an in-frame error page for an unknown actor, an expired or used link and an origin that is not allowed; each posts svc:connect:error", async () => {
    const page = await chromium.context.newPage()
    await page.goto(hostOrigin)
    const frame = connectFrame(page)
    await frame.getByRole("heading", { name: "Connected accounts" }).waitFor()
    const returnTo = `${publicOrigin}/connect/?host_origin=${encodeURIComponent(hostOrigin)}`
    const errorsOf = async (target: Page) => (await hostEvents(target)).filter((e) => e.type === "svc:connect:error")
    const show = async (url: string, code: string, title: string, shot: string) => {
      await page.evaluate(`document.getElementById("svc-connect").src = ${JSON.stringify(url)}`)
      await frame.getByRole("heading", { name: title }).waitFor()
      await expect.poll(async () => (await errorsOf(page)).map((e) => e.code)).toContain(code)
      expect(await frame.locator(`section[data-code="${code}"]`).count()).toBe(1)
      await chromium.shot(page, shot)
      expect(await chromium.axe(svcFrame(page))).toEqual([])
    }
    await show(
      await marketplaceLoginUrl(svc, `nobody-${rand()}`, returnTo),
      "unknown_actor",
      "Your account is not set up yet",
      "connect-15-error-unknown-actor"
    )
    await show(
      await marketplaceLoginUrl(svc, user, returnTo, { expiredSecondsAgo: 600 }),
      "link_expired",
      "This link has expired",
      "connect-16-error-link-expired"
    )
    const once = await marketplaceLoginUrl(svc, user, returnTo)
    expect((await fetch(once, { redirect: "manual" })).status).toBe(303)
    await show(once, "link_invalid", "This link cannot be used", "connect-17-error-link-used")
    // What the host must do is in the message and, folded, on the page.
    const expired = (await errorsOf(page)).find((e) => e.code === "link_expired")
    expect(expired?.message).toContain("sign a fresh one")
    await page.close()

    // A host whose origin is not in allowed_origins: the frame says so instead of staying blank,
    // and that host (only it: the message names no account) learns why.
    const strayPort = await freePort()
    const strayOrigin = `http://127.0.0.1:${strayPort}`
    strayHostApp = await startHostApp(strayPort, user)
    const stray = await chromium.context.newPage()
    await stray.goto(strayOrigin)
    await connectFrame(stray).getByRole("heading", { name: "This application may not show this page" }).waitFor()
    await expect.poll(async () => (await errorsOf(stray)).map((e) => e.code)).toEqual(["origin_not_allowed"])
    expect((await errorsOf(stray))[0]?.message).toContain("host_application.allowed_origins")
    await chromium.shot(stray, "connect-18-error-origin-not-allowed")
    const strayFrame = stray.frames().find((f) => f.url().startsWith(`${publicOrigin}/connect/error`))
    expect(strayFrame).toBeDefined()
    if (strayFrame !== undefined) expect(await chromium.axe(strayFrame)).toEqual([])
    await stray.close()

    // The same host sending neither host_origin nor a Referer: svc's frame check asks the browser
    // for the frame's ancestor, and the frame shows the error page instead of staying blank. The
    // login's token is not used.
    const bareLogin = await marketplaceLoginUrl(svc, user, `${publicOrigin}/connect/`)
    const bareHtml = `<!doctype html><html lang="en"><head><title>Stray app</title><link rel="icon" href="data:,"></head><body>
<h1>Stray app</h1><iframe id="svc-connect" title="Connect your accounts" referrerpolicy="no-referrer" width="900" height="620"
src="${bareLogin.replaceAll("&", "&amp;")}"></iframe><pre id="events"></pre>
<script>window.addEventListener("message", (event) => {
  if (event.origin !== ${JSON.stringify(publicOrigin)}) return
  document.getElementById("events").textContent += JSON.stringify(event.data) + "\\n"
})</script></body></html>`
    // A page on a loopback origin of its own (Chromium refuses a routed page framing loopback).
    const bareServer = http.createServer((_request, response) =>
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(bareHtml)
    )
    await new Promise<void>((resolve) => bareServer.listen(0, "127.0.0.1", resolve))
    const bareOrigin = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}`
    const bare = await chromium.context.newPage()
    await bare.goto(bareOrigin)
    await connectFrame(bare).getByRole("heading", { name: "This application may not show this page" }).waitFor()
    await expect.poll(async () => (await errorsOf(bare)).map((e) => e.code)).toEqual(["origin_not_allowed"])
    const bareFrame = bare.frames().find((f) => f.url().startsWith(`${publicOrigin}/connect/error`))
    expect(new URL(bareFrame?.url() ?? "http://x").searchParams.get("host_origin")).toBe(bareOrigin)
    await chromium.shot(bare, "connect-19-error-origin-without-referrer")
    if (bareFrame !== undefined) expect(await chromium.axe(bareFrame)).toEqual([])
    expect((await fetch(bareLogin, { redirect: "manual" })).status).toBe(303)
    await bare.close()
    await new Promise((resolve) => bareServer.close(resolve))

    // An allowed host sending neither: the frame check reports its origin and the Connect UI opens.
    const allowed = await chromium.context.newPage()
    await allowed.goto(hostOrigin)
    await connectFrame(allowed).getByRole("heading", { name: "Connected accounts" }).waitFor()
    const plainLogin = await marketplaceLoginUrl(svc, user, `${publicOrigin}/connect/`)
    await allowed.evaluate(
      `(() => { const frame = document.getElementById("svc-connect"); frame.referrerPolicy = "no-referrer"; frame.src = ${JSON.stringify(plainLogin)} })()`
    )
    await expect.poll(() => allowed.frames().some((f) => f.url() === `${publicOrigin}/connect/`)).toBe(true)
    await connectFrame(allowed).getByRole("heading", { name: "Connected accounts" }).waitFor()
    await allowed.close()
  }, 120_000)

  it("tells a browser without a session to sign in from the application, without logging errors", async () => {
    const fresh = await chromium.browser.newContext()
    try {
      const page = await fresh.newPage()
      const errors: Array<string> = []
      page.on("console", (message) => {
        if (message.type() === "error") errors.push(message.text())
      })
      page.on("pageerror", (error) => errors.push(error.message))
      await page.goto(`${publicOrigin}/connect/`)
      await page.getByRole("heading", { name: "Sign-in required" }).waitFor()
      expect(await page.getByRole("link", { name: "Sign in" }).getAttribute("href")).toBe(
        "/marketplace/login?return_to=%2Fconnect%2F"
      )
      await chromium.shot(page, "connect-14-signed-out")
      expect(errors).toEqual([])
    } finally {
      await fresh.close()
    }
  })

  it("logged no console error and no uncaught exception on any svc page (beyond the refused verification)", () => {
    // Chromium logs every non-2xx fetch; the one 409 of the deliberately failed verification is expected.
    const unexpected = chromium
      .problems([publicOrigin, hostOrigin])
      .filter((p) => !(p.text.includes("status of 409") && p.text.includes("/_setup")))
    expect(unexpected).toEqual([])
    expect(chromium.problems([publicOrigin, hostOrigin]).length).toBe(1)
  })
})
