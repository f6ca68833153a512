import { assert, describe, it } from "@effect/vitest"
import { proxyTarget } from "./Proxy.ts"

const base = new URL("https://api.example.com/v2")

const forwarded = (target: string) => {
  const result = proxyTarget(base, target)
  return result._tag === "Forward" ? result.url.href : `refused ${result.status} ${result.code}`
}

describe("proxyTarget", () => {
  it("origin-form targets are relative to the upstream base", () => {
    assert.strictEqual(forwarded("/items?a=1"), "https://api.example.com/v2/items?a=1")
  })

  it("absolute-form targets of the base's host keep path and query and take the base's scheme", () => {
    assert.strictEqual(forwarded("http://api.example.com/items?a=1"), "https://api.example.com/v2/items?a=1")
    assert.strictEqual(forwarded("https://API.example.com:443/x"), "https://api.example.com/v2/x")
  })

  it("another host or port is refused with 421, a target that is no URL with 400", () => {
    assert.strictEqual(forwarded("http://evil.example.net/items"), "refused 421 wrong_upstream_host")
    assert.strictEqual(forwarded("http://api.example.com:8080/items"), "refused 421 wrong_upstream_host")
    assert.strictEqual(forwarded("ftp://api.example.com/items"), "refused 400 invalid_request_target")
    assert.strictEqual(forwarded("*"), "refused 400 invalid_request_target")
  })
})
