import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { definitionParseOptions } from "./ConnectorDefinition.ts"
import { ConnectorProbe, fillPlaceholders, placeholderKeys, probeStatusOk, probeUrlShape } from "./ConnectorProbe.ts"
import { issueDetails } from "./Errors.ts"

const decode = (input: unknown) => Schema.decodeUnknownExit(ConnectorProbe)(input, definitionParseOptions)

const problems = (input: unknown) => {
  const exit = decode(input)
  if (Exit.isSuccess(exit)) return []
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? issueDetails(reason.error.issue) : []
}

const url = "https://api.example.com/health"

describe("ConnectorProbe", () => {
  it("fills method, timeout, enabled and thresholds; leaves expected_statuses and period absent", () => {
    assert.deepStrictEqual(
      decode({ id: "health", url }),
      Exit.succeed({
        id: "health",
        method: "GET",
        url,
        timeout: "10s",
        enabled: true,
        verify: false,
        failure_threshold: 3,
        recovery_threshold: 1
      })
    )
  })

  it("names each invalid field", () => {
    assert.deepStrictEqual(
      problems({
        id: "Health Check",
        method: "get",
        url,
        expected_statuses: [200, 99, 600, 250.5],
        timeout: "61s",
        period: "500ms",
        failure_threshold: 0,
        recovery_threshold: 101
      }).map((problem) => problem.field),
      [
        "id",
        "method",
        "expected_statuses[1]",
        "expected_statuses[2]",
        "expected_statuses[3]",
        "timeout",
        "period",
        "failure_threshold",
        "recovery_threshold"
      ]
    )
    assert.deepStrictEqual(problems({ id: "p", url, expected_statuses: [200, 200] }), [
      { field: "expected_statuses", message: "must not repeat a status" }
    ])
    assert.deepStrictEqual(problems({ id: "p", url, expected_statuses: [] }), [
      { field: "expected_statuses", message: "must not be empty; omit expected_statuses to accept any 2xx" }
    ])
  })

  it("accepts only absolute http(s) URLs without credentials or fragments", () => {
    for (const bad of [
      "/relative",
      "ftp://api.example.com/",
      "https://user:pw@api.example.com/",
      "https://api.example.com/#frag",
      "https://api.example.com/{{region}}",
      "https://api.example.com/{{cfg.bad-key}}",
      "https://api.example.com/}}"
    ]) {
      assert.strictEqual(problems({ id: "p", url: bad })[0]?.field, "url", bad)
    }
    assert.deepStrictEqual(problems({ id: "p", url: "http://127.0.0.1:8080/{{ cfg.path }}?q={{cfg.q}}" }), [])
  })

  it("refuses headers the service owns and control characters in values", () => {
    assert.deepStrictEqual(
      problems({
        id: "p",
        url,
        headers: { Authorization: "x", "X-Svc-Upstream-URL": "x", Cookie: "a", "X-Ok": "fine", "X-Bad": "a\r\nb" }
      }).map((problem) => problem.field),
      ["headers.Authorization", "headers.X-Svc-Upstream-URL", "headers.Cookie", "headers.X-Bad"]
    )
    assert.deepStrictEqual(problems({ id: "p", url, headers: { "bad name": "x" } })[0]?.field, "headers.bad name")
  })

  it("finds and fills placeholders", () => {
    const text = "https://{{cfg.tenant}}.example.com/{{ cfg.path }}"
    assert.deepStrictEqual(placeholderKeys(text), ["tenant", "path"])
    assert.strictEqual(
      fillPlaceholders(text, (key) => key.toUpperCase()),
      "https://TENANT.example.com/PATH"
    )
    assert.strictEqual(probeUrlShape(text)?.hostIsFixed, false)
    assert.strictEqual(probeUrlShape("https://a.example.com:{{cfg.port}}/")?.hostIsFixed, false)
    assert.strictEqual(probeUrlShape("https://a.example.com/{{cfg.path}}")?.hostIsFixed, true)
    assert.strictEqual(probeUrlShape("{{cfg.url}}"), undefined)
  })

  it("counts any 2xx as success unless expected_statuses is given", () => {
    assert.isTrue(probeStatusOk({}, 204))
    assert.isFalse(probeStatusOk({}, 301))
    assert.isTrue(probeStatusOk({ expected_statuses: [401] }, 401))
    assert.isFalse(probeStatusOk({ expected_statuses: [401] }, 200))
  })
})
