import { assert, describe, it } from "@effect/vitest"
import { Runtime } from "effect"
import { CliError } from "effect/cli"
import { HttpClientError, HttpClientRequest } from "effect/http"
import { BadRequest, Conflict, Forbidden, NotFound, ServiceUnavailable, Unauthorized } from "@svc/domain/Errors"
import { ApiFailure, ExitCode, toApiFailure } from "./ApiFailure.ts"

const map = toApiFailure("http://127.0.0.1:8081", "list connectors")
const body = { error: "nope", code: "x" }

describe("toApiFailure", () => {
  it("401, 403 and 404 have their own kinds and exit codes, with the server's message on one line", () => {
    const unauthorized = map(new Unauthorized({ error: "invalid token", code: "unauthorized" }))
    assert.strictEqual(unauthorized.kind, "unauthorized")
    assert.strictEqual(unauthorized[Runtime.errorExitCode], ExitCode.unauthorized)
    assert.match(unauthorized.message, /^list connectors: 401 unauthorized: invalid token — /)
    const forbidden = map(new Forbidden({ error: "not permitted", code: "forbidden" }))
    assert.strictEqual(forbidden[Runtime.errorExitCode], 5)
    assert.match(forbidden.message, /^list connectors: 403 forbidden: not permitted/)
    const notFound = map(new NotFound({ error: "task tsk_1 not found", code: "not_found" }))
    assert.strictEqual(notFound[Runtime.errorExitCode], 6)
    assert.strictEqual(notFound.message, "list connectors: 404 not_found: task tsk_1 not found")
    for (const failure of [unauthorized, forbidden, notFound]) {
      assert.notInclude(failure.message, "\n")
      assert.strictEqual(failure[CliError.userMessage], failure.message)
    }
  })

  it("other API errors exit 7 and name each detail", () => {
    const bad = map(
      new BadRequest({
        error: "invalid query",
        code: "invalid_request",
        details: [{ field: "query.order", message: "bad order" }]
      })
    )
    assert.strictEqual(bad.kind, "apiError")
    assert.strictEqual(bad[Runtime.errorExitCode], 7)
    assert.strictEqual(bad.message, "list connectors: 400 invalid_request: invalid query (query.order: bad order)")
    assert.strictEqual(map(new Conflict(body))[Runtime.errorExitCode], 7)
    assert.strictEqual(map(new ServiceUnavailable(body))[Runtime.errorExitCode], 7)
  })

  it("a connection failure is 'unreachable' (exit 3) naming the URL and the socket error", () => {
    const request = HttpClientRequest.get("http://127.0.0.1:8081/api/v1/connectors")
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })
    const failure = map(
      new HttpClientError.HttpClientError({
        reason: new HttpClientError.TransportError({
          request,
          cause: new TypeError("fetch failed", { cause: refused })
        })
      })
    )
    assert.strictEqual(failure.kind, "unreachable")
    assert.strictEqual(failure[Runtime.errorExitCode], 3)
    assert.strictEqual(
      failure.message,
      "list connectors: cannot reach the api at http://127.0.0.1:8081 (ECONNREFUSED) — is svc running there? Set --apiUrl or server.api in the config"
    )
  })

  it("an ApiFailure passes through unchanged; anything else is a one-line apiError", () => {
    const failure = new ApiFailure({ kind: "taskFailed", message: "task failed" })
    assert.strictEqual(map(failure), failure)
    assert.strictEqual(failure[Runtime.errorExitCode], 8)
    const other = map(new Error("first line\nsecond line"))
    assert.strictEqual(other.message, "list connectors: first line")
  })
})
