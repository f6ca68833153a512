/**
 * The admin UI's webhooks screen in real Chromium (issue 34): an operator creates an endpoint
 * through the form and sees its signing secret once, sends a test event (the receiver verifies its
 * signature with `standardwebhooks`), sees the delivery's state, attempts and last status, and
 * redelivers a failed delivery. Screenshots go to test/screenshots/ (git-ignored).
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { type ChromiumSession, launchChromium } from "../support/Chromium.ts"
import { adminLoginUrl } from "../support/LoginUrls.ts"
import { startWebhookReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

let svc: Svc
let receiver: WebhookReceiver
let chromium: ChromiumSession
let page: Page
let ns: string

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  svc = await launch("svc-e2e-ui-webhooks-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__webhooks__retry_schedule: "[200ms]",
      SVC__webhooks__poll_interval: "100ms"
    }
  })
  ns = await resources(svc).freshNamespace("uiwh")
  chromium = await launchChromium()
  page = await chromium.context.newPage()
}, 180_000)

afterAll(async () => {
  await chromium?.close()
  await svc?.stop()
  await receiver?.close()
})

describe("admin UI: webhooks", () => {
  it("creates an endpoint, shows its secret once, sends a test, shows deliveries and redelivers", async () => {
    await page.goto(await adminLoginUrl(svc, "admin"))
    await page.getByText("Signed in as admin").waitFor()
    await page.getByRole("link", { name: "Webhooks", exact: true }).click()
    await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor()

    await page.getByRole("button", { name: "New webhook" }).click()
    const form = page.getByRole("form", { name: "New webhook" })
    await form.getByLabel("Namespace", { exact: true }).fill(ns)
    await form.getByLabel("URL").fill("ftp://nope")
    await form.getByRole("button", { name: "Create webhook" }).click()
    await form.getByRole("alert").filter({ hasText: "http" }).waitFor()
    await form.getByLabel("URL").fill(receiver.url("/ui"))
    await form.getByLabel("Event types (comma separated)").fill("webhook.test")
    await form.getByRole("button", { name: "Create webhook" }).click()
    const secret = await page.getByTestId("webhook-secret").textContent()
    expect(secret).toMatch(/^whsec_/)
    receiver.secret("/ui", secret as string)
    await chromium.shot(page, "admin-webhooks-01-secret")
    await page.getByRole("button", { name: "Done" }).click()
    expect(await page.getByTestId("webhook-secret").count()).toBe(0)

    await page.getByLabel("Namespace filter").fill(ns)
    const row = page.getByTestId("webhooks").locator("tbody tr")
    await row.first().waitFor()
    expect(await row.count()).toBe(1)
    const hookName = (await row.first().locator("td").first().textContent()) ?? ""

    // A test event answered 500: the delivery fails after its one retry, then is redelivered to a 200.
    receiver.answer("/ui", 500)
    await page.getByRole("button", { name: `Deliveries of ${hookName}` }).click()
    await page.getByRole("button", { name: "Send test" }).click()
    await page.getByRole("status").filter({ hasText: "Queued a test event" }).waitFor()
    const delivery = page.getByTestId("webhook-deliveries").locator("tbody tr").first()
    await eventually(
      async () => {
        await page.getByRole("button", { name: "Refresh" }).click()
        return delivery.getAttribute("data-state").catch(() => null)
      },
      (state) => state === "failed"
    )
    expect(await delivery.locator("td").nth(3).textContent()).toBe("2")
    expect(await delivery.locator("td").nth(4).textContent()).toBe("500")
    await chromium.shot(page, "admin-webhooks-02-failed")

    receiver.answer("/ui", 200)
    const deliveryId = (await delivery.getAttribute("data-delivery-id")) as string
    await page.getByRole("button", { name: `Redeliver ${deliveryId}` }).click()
    await eventually(
      async () => {
        await page.getByRole("button", { name: "Refresh" }).click()
        return delivery.getAttribute("data-state").catch(() => null)
      },
      (state) => state === "succeeded"
    )
    expect(await delivery.locator("td").nth(4).textContent()).toBe("200")
    const received = receiver.received("/ui")
    expect(received.map((e) => e.status)).toEqual([500, 500, 200])
    expect(new Set(received.map((e) => e.webhookId)).size).toBe(1)
    for (const event of received) expect(event.verifiedWith).toBe(0)
    const listed = expectStatus<{ items: ReadonlyArray<{ id: string }> }>(
      await svc.call("GET", `/api/v1/webhooks?namespace=${ns}`),
      200
    )
    expect(listed.items).toHaveLength(1)
    await chromium.shot(page, "admin-webhooks-03-redelivered")
  }, 120_000)
})
