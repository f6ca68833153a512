/**
 * The notice of an auto-disabled webhook endpoint (issue 34; docs/webhooks.md "Auto-disable"),
 * black-box on the embedded default with a short `webhooks.disable_after`: an endpoint whose
 * receiver keeps answering 500 is disabled by the worker and a namespace-level warning appears in
 * `GET /api/v1/notifications` for the actors who may read webhooks there (bearer token and
 * marketplace session alike), never for an end user without webhooks permissions nor in the
 * Connect UI's listing (the same endpoint on the end user's `svc_session`); re-enabling the
 * endpoint resolves it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectStatus, launch, rand, resources, type Svc } from "../support/Api.ts"
import { marketplaceLoginUrl } from "../support/LoginUrls.ts"
import { startWebhookReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

interface NoticeBody {
  readonly id: string
  readonly key: string
  readonly level: string
  readonly title: string
  readonly message: string
  readonly action_url: string | null
  readonly metadata: Record<string, unknown>
  readonly viewed: boolean
  readonly can_action: boolean
}

let svc: Svc
let receiver: WebhookReceiver

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  svc = await launch("svc-whnotice-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__webhooks__retry_schedule: "[200ms, 200ms]",
      SVC__webhooks__poll_interval: "100ms",
      SVC__webhooks__disable_after: "1s"
    }
  })
}, 120_000)

afterAll(async () => {
  if (process.env.WEBHOOKS_TEST_DEBUG === "1") console.log(svc?.output())
  await svc?.stop()
  await receiver?.close()
})

/** The marketplace session cookies of `externalId`, as the Connect UI's browser holds them. */
const sessionOf = async (externalId: string) => {
  const answer = await fetch(await marketplaceLoginUrl(svc, externalId, "/connect/"), { redirect: "manual" })
  expect(answer.status).toBe(303)
  const cookies = answer.headers.getSetCookie().map((cookie) => cookie.split(";")[0] as string)
  expect(cookies.some((cookie) => cookie.startsWith("svc_session="))).toBe(true)
  return cookies.join("; ")
}

/** `GET /api/v1/notifications` on the public service with a session, as the Connect UI calls it. */
const connectUiNotices = async (cookie: string) => {
  const answer = await fetch(`http://127.0.0.1:${svc.ports.public}/api/v1/notifications?include_viewed=true`, {
    headers: { cookie }
  })
  expect(answer.status).toBe(200)
  return ((await answer.json()) as { items: ReadonlyArray<NoticeBody> }).items
}

const noticesWith = async (token?: string) =>
  expectStatus<{ items: ReadonlyArray<NoticeBody> }>(
    await svc.call<{ items: ReadonlyArray<NoticeBody> }>("GET", "/api/v1/notifications?include_viewed=true", {
      ...(token === undefined ? {} : { token })
    }),
    200
  ).items

describe("webhook endpoint notices", () => {
  it("announces an auto-disabled endpoint to who may read webhooks, not to Connect UI end users; re-enabling clears it", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whnotice")
    const path = `/down-${rand()}`
    receiver.answer(path, 500)
    const hook = expectStatus<{ id: string; secret: string }>(
      await svc.call<{ id: string; secret: string }>("POST", "/api/v1/webhooks", {
        body: { namespace: ns, url: receiver.url(path), events: ["webhook.test"] }
      }),
      201
    )
    receiver.secret(path, hook.secret)
    const actor = async (role: string, permissions: ReadonlyArray<Record<string, unknown>>) => {
      const externalId = `${role}-${rand()}`
      expectStatus(await svc.call("POST", "/api/v1/actors", { body: { namespace: ns, externalId, permissions } }), 201)
      return externalId
    }
    // Reads webhooks and notifications in the namespace, may not change an endpoint.
    const operator = await actor("operator", [
      { namespace: ns, resources: ["webhooks"], verbs: ["get", "list"] },
      { namespace: ns, resources: ["notifications"], verbs: ["list", "update"] }
    ])
    // A Connect UI end user: connections, connectors and notifications, no webhooks.
    const endUser = await actor("enduser", [
      { namespace: ns, resources: ["connections", "connectors", "notifications"], verbs: ["*"] }
    ])
    const ofHook = (items: ReadonlyArray<NoticeBody>) => items.filter((item) => item.metadata.webhook_id === hook.id)

    expectStatus(await svc.call("POST", `/api/v1/webhooks/${hook.id}/_test`), 202)
    await eventually(
      async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/webhooks/${hook.id}`), 200),
      (body) => body.state === "disabled"
    )
    expect(receiver.received(path).length).toBeGreaterThan(0)
    expect(receiver.received(path).every((event) => event.status === 500)).toBe(true)

    // The admin sees one warning notice with the endpoint's id, and may act on it.
    const [notice, ...others] = ofHook(await noticesWith())
    expect(others).toHaveLength(0)
    expect(notice).toMatchObject({
      key: "svc.webhook_disabled",
      level: "warning",
      title: "Webhook endpoint disabled",
      action_url: "/ui/#webhooks",
      viewed: false,
      can_action: true
    })
    expect(notice?.message).not.toContain(receiver.url(path))
    expect(notice?.message).not.toContain(hook.secret)
    const id = notice?.id as string

    // The operator sees it (bearer token and marketplace session) and may not act on it.
    const operatorToken = await svc.sign(operator)
    expect(ofHook(await noticesWith(operatorToken)).map((n) => [n.id, n.can_action])).toEqual([[id, false]])
    expect(ofHook(await connectUiNotices(await sessionOf(operator))).map((n) => n.id)).toEqual([id])

    // The end user sees nothing: not with a token, not in the Connect UI's listing, cannot mark it.
    const endUserToken = await svc.sign(endUser)
    expect(ofHook(await noticesWith(endUserToken))).toEqual([])
    expect(ofHook(await connectUiNotices(await sessionOf(endUser)))).toEqual([])
    expect((await svc.call("POST", `/api/v1/notifications/${id}/_viewed`, { token: endUserToken })).status).toBe(404)
    expectStatus(await svc.call("POST", `/api/v1/notifications/${id}/_viewed`, { token: operatorToken }), 204)
    expect(ofHook(await noticesWith(operatorToken)).map((n) => n.viewed)).toEqual([true])

    // Re-enabling the endpoint resolves the notice.
    expectStatus(await svc.call("PATCH", `/api/v1/webhooks/${hook.id}`, { body: { state: "enabled" } }), 200)
    expect(ofHook(await noticesWith())).toEqual([])
    expect(ofHook(await noticesWith(operatorToken))).toEqual([])
  }, 90_000)
})
