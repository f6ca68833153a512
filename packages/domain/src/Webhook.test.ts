import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { CreateWebhook, signedContent, subscriptionMatches } from "./Webhook.ts"

const event = (type: string, namespace: string, labels: Record<string, string> = {}) => ({ type, namespace, labels })

describe("subscriptionMatches", () => {
  const all = { namespace: "root.acme", events: null, labelSelector: null }

  it("takes the endpoint's namespace and its subtree, nothing beside it", () => {
    expect(subscriptionMatches(all, event("connection.created", "root.acme"))).toBe(true)
    expect(subscriptionMatches(all, event("connection.created", "root.acme.team"))).toBe(true)
    expect(subscriptionMatches(all, event("connection.created", "root.acmecorp"))).toBe(false)
    expect(subscriptionMatches(all, event("connection.created", "root"))).toBe(false)
  })

  it("filters by event type and by label selector", () => {
    const created = { ...all, events: ["connection.created"] }
    expect(subscriptionMatches(created, event("connection.created", "root.acme"))).toBe(true)
    expect(subscriptionMatches(created, event("task.failed", "root.acme"))).toBe(false)
    const gold = { ...all, labelSelector: "tier=gold,!legacy" }
    expect(subscriptionMatches(gold, event("task.failed", "root.acme", { tier: "gold" }))).toBe(true)
    expect(subscriptionMatches(gold, event("task.failed", "root.acme", { tier: "gold", legacy: "" }))).toBe(false)
    expect(subscriptionMatches(gold, event("task.failed", "root.acme", {}))).toBe(false)
  })

  it("an unparsable stored selector matches nothing", () => {
    expect(subscriptionMatches({ ...all, labelSelector: "a!!b" }, event("connection.created", "root.acme"))).toBe(false)
  })
})

describe("CreateWebhook", () => {
  const decode = Schema.decodeUnknownResult(CreateWebhook)
  it("refuses URLs that are not http(s) or carry credentials, unknown event types and bad selectors", () => {
    expect(decode({ namespace: "root", url: "https://example.com/h" })._tag).toBe("Success")
    expect(decode({ namespace: "root", url: "ftp://example.com/h" })._tag).toBe("Failure")
    expect(decode({ namespace: "root", url: "https://user:pw@example.com/h" })._tag).toBe("Failure")
    expect(decode({ namespace: "root", url: "https://example.com/h", events: ["connection.exploded"] })._tag).toBe(
      "Failure"
    )
    expect(decode({ namespace: "root", url: "https://example.com/h", events: [] })._tag).toBe("Failure")
    expect(decode({ namespace: "root", url: "https://example.com/h", label_selector: "a!!b" })._tag).toBe("Failure")
  })
})

it("the signed content is id.timestamp.body", () => {
  expect(signedContent("msg_1", 1700000000, '{"a":1}')).toBe('msg_1.1700000000.{"a":1}')
})
