/**
 * Notification routes over real HTTP (spec 4.4; API-CONVENTIONS "Tasks and notifications"): the
 * list answers `{items: []}` on a fresh service, marking an unknown id viewed is 404, the bulk
 * route ignores unknown ids (204), input errors are 400 and a token without the notification
 * permissions is 403. Raising notices is covered by the server-level service test.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError, expectStatus, launch, type Svc } from "../support/Api.ts"

let svc: Svc
let connectionsOnly: string

beforeAll(async () => {
  svc = await launch("svc-e2e-notifications-")
  connectionsOnly = await svc.sign("admin", {
    permissions: [{ namespace: "**", resources: ["connections"], verbs: ["*"] }]
  })
}, 120_000)

afterAll(async () => {
  await svc?.stop()
})

describe.each(["api", "admin-api"] as const)("on the %s", (service) => {
  it("lists no notifications on a fresh service, with or without include_viewed", async () => {
    for (const query of ["", "?include_viewed=false", "?include_viewed=true"]) {
      const reply = await svc.call("GET", `/api/v1/notifications${query}`, { service })
      expect(expectStatus(reply, 200)).toEqual({ items: [] })
    }
  })

  it("marks viewed: an unknown id is 404, unknown ids in bulk are ignored (204)", async () => {
    expectError(await svc.call("POST", "/api/v1/notifications/ntf_unknown/_viewed", { service }), 404, "not_found")
    const bulk = await svc.call("POST", "/api/v1/notifications/_viewed", { service, body: { ids: ["ntf_unknown"] } })
    expect(bulk.status).toBe(204)
    expect(bulk.body).toBeUndefined()
  })
})

describe("input and permissions", () => {
  it("rejects a non-boolean include_viewed, an empty or oversized ids list and unknown fields with 400", async () => {
    expectError(await svc.call("GET", "/api/v1/notifications?include_viewed=yes"), 400, "invalid_request")
    expectError(await svc.call("GET", "/api/v1/notifications?viewed=true"), 400, "invalid_request")
    const post = (body: unknown) => svc.call("POST", "/api/v1/notifications/_viewed", { body })
    expectError(await post({ ids: [] }), 400, "invalid_request")
    expectError(await post({ ids: Array.from({ length: 1001 }, (_, i) => `ntf_${i}`) }), 400, "invalid_request")
    expectError(await post({ ids: ["ntf_a"], all: true }), 400, "invalid_request")
  })

  it("answers 403 to a token without notifications:list or notifications:update, and 401 without a token", async () => {
    const token = connectionsOnly
    expectError(await svc.call("GET", "/api/v1/notifications", { token }), 403, "forbidden")
    expectError(await svc.call("POST", "/api/v1/notifications/ntf_unknown/_viewed", { token }), 403, "forbidden")
    expectError(
      await svc.call("POST", "/api/v1/notifications/_viewed", { token, body: { ids: ["ntf_unknown"] } }),
      403,
      "forbidden"
    )
    expectError(await svc.call("GET", "/api/v1/notifications", { token: null }), 401, "unauthorized")
  })
})
