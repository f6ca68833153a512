// @vitest-environment happy-dom
/**
 * The JSON boundary of both UIs: a plain route's answer is checked before it gets a type, and an
 * error body's fields are read without trusting its shape.
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import { ApiError, getChecked, hasFields, makeApi } from "./api.ts"

interface Sample {
  readonly id: string
  readonly next: string | null
  readonly tags: ReadonlyArray<string>
}
const isSample = hasFields<Sample>({ id: "string", next: "string?", tags: "strings" })

const answer = (status: number, body: string) =>
  vi.stubGlobal(
    "fetch",
    vi.fn(async () => new Response(body, { status, headers: { "content-type": "application/json" } }))
  )

afterEach(() => {
  vi.unstubAllGlobals()
})

describe("shared/api", () => {
  it("hasFields accepts only objects whose fields have the declared kinds", () => {
    expect(isSample({ id: "a", next: null, tags: [] })).toBe(true)
    expect(isSample({ id: "a", next: "b", tags: ["x"], extra: 1 })).toBe(true)
    expect(isSample({ id: "a", tags: [] })).toBe(false)
    expect(isSample({ id: 1, next: null, tags: [] })).toBe(false)
    expect(isSample({ id: "a", next: null, tags: [1] })).toBe(false)
    expect(isSample(null)).toBe(false)
    expect(isSample("a")).toBe(false)
  })

  it("getChecked answers a checked body and refuses another shape", async () => {
    const api = makeApi("XSRF-TOKEN")
    answer(200, JSON.stringify({ id: "a", next: null, tags: ["x"] }))
    await expect(getChecked(api, "/sample", isSample)).resolves.toEqual({ id: "a", next: null, tags: ["x"] })
    answer(200, JSON.stringify({ id: "a" }))
    await expect(getChecked(api, "/sample", isSample)).rejects.toMatchObject({ code: "unexpected_answer" })
  })

  it("turns an error body into an ApiError, keeping only well-formed details", async () => {
    const api = makeApi("XSRF-TOKEN")
    answer(
      400,
      JSON.stringify({
        error: "invalid",
        code: "invalid_request",
        details: [{ field: "url", message: "required" }, { field: 1 }, "x"]
      })
    )
    const error = await api.get("/x").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({
      status: 400,
      message: "invalid",
      code: "invalid_request",
      details: [{ field: "url", message: "required" }]
    })
    // svc's own 429 body has no code (spec 7: {error, rate_limit_id, retry_after_seconds}).
    answer(429, JSON.stringify({ error: "rate limited", rate_limit_id: "rl_1", retry_after_seconds: 3 }))
    await expect(api.get("/x")).rejects.toMatchObject({ status: 429, code: "rate_limited", message: "rate limited" })
    answer(502, "not json")
    await expect(api.get("/x")).rejects.toMatchObject({ status: 502, code: "http_error", details: [] })
  })
})
