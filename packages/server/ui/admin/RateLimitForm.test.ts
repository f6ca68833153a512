/** The rate-limit form's model: checks before sending, what is sent, and where server details land. */
import { describe, expect, it } from "vitest"
import { check, definitionOf, emptyForm, fieldOfDetail, formOf, labelsOf } from "./RateLimitForm.ts"

describe("rate-limit form model", () => {
  it("refuses what the server would, field by field, before anything is sent", () => {
    expect(check(emptyForm)).toEqual({})
    expect(check({ ...emptyForm, namespace: " ", limit: "0", window: "soon", labels: "team" })).toEqual({
      namespace: "A namespace is required.",
      limit: "A whole number greater than 0.",
      window: "A duration such as 30s, 1m or 1h.",
      labels: "Labels are key=value pairs separated by commas."
    })
    expect(check({ ...emptyForm, algorithm: "token_bucket", capacity: "1.5", refillRate: "-1" })).toEqual({
      capacity: "A whole number greater than 0.",
      refillRate: "A number greater than 0 (tokens per second)."
    })
  })

  it("sends the definition with the label selector, methods, path prefix and dimensions", () => {
    const form = {
      ...emptyForm,
      methods: "get, post",
      pathPrefix: "/v1",
      labelSelector: " tier in (gold) ",
      dimensions: "connection, labels/team",
      labels: "team=billing, env = prod"
    }
    expect(definitionOf(form)).toEqual({
      mode: "enforce",
      selector: {
        methods: ["GET", "POST"],
        path_match: { kind: "prefix", value: "/v1" },
        label_selector: "tier in (gold)"
      },
      bucket: { dimensions: ["connection", "labels/team"] },
      algorithm: { fixed_window: { window: "1m", limit: 100 } }
    })
    expect(labelsOf(form)).toEqual({ team: "billing", env: "prod" })
    expect(definitionOf(emptyForm).selector).toEqual({})
  })

  it("reads a stored rule back into the form, label selector included, system labels left out", () => {
    const rule = {
      id: "rl_1",
      name: "per-minute",
      namespace: "root.acme",
      labels: { team: "billing", "svc/rl/namespace": "root.acme" },
      annotations: {},
      createdAt: "2026-01-01T00:00:00Z",
      updatedAt: "2026-01-01T00:00:00Z",
      definition: {
        mode: "observe",
        selector: { label_selector: "tier=gold" },
        bucket: { dimensions: ["connection"] },
        algorithm: { token_bucket: { capacity: 20, refill_rate: 0.5 } }
      }
    } as unknown as Parameters<typeof formOf>[0]
    expect(formOf(rule)).toMatchObject({
      mode: "observe",
      algorithm: "token_bucket",
      capacity: "20",
      refillRate: "0.5",
      labelSelector: "tier=gold",
      dimensions: "connection",
      labels: "team=billing"
    })
  })

  it("puts each server detail beside its field", () => {
    expect(fieldOfDetail("body.definition.selector.label_selector")).toBe("labelSelector")
    expect(fieldOfDetail("body.definition.algorithm.fixed_window.limit")).toBe("limit")
    expect(fieldOfDetail("body.definition.bucket.dimensions.1")).toBe("dimensions")
    expect(fieldOfDetail("body.labels.Bad Key")).toBe("labels")
    expect(fieldOfDetail("body.name")).toBe("name")
    expect(fieldOfDetail("body.somethingElse")).toBeUndefined()
  })
})
