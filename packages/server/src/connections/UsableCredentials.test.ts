/** When stored OAuth2 credentials are due for refresh (spec 8.3) and when a failed refresh is retried. */
import { assert, describe, it } from "@effect/vitest"
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Schema } from "effect"
import { dueAt, isDue, retryAt } from "./UsableCredentials.ts"

const t0 = 1_700_000_000_000
const minute = 60_000
const defaultLifetime = 60 * minute

const definition = (auth: Record<string, unknown>): ConnectorDefinition =>
  Schema.decodeUnknownSync(ConnectorDefinition)({ type: "demo", auth })

const authCode = (refresh?: Record<string, unknown>) =>
  definition({
    type: "oauth2",
    grant_type: "authorization_code",
    authorization_endpoint: "https://provider.example/authorize",
    token_endpoint: "https://provider.example/token",
    ...(refresh === undefined ? {} : { refresh })
  })

const clientCredentials = definition({
  type: "oauth2",
  grant_type: "client_credentials",
  token_endpoint: "https://provider.example/token"
})

const code = (
  token: Partial<{ expires_at: number; refresh_token: string; obtained_at: number }>
): StoredCredentials => ({
  kind: "oauth2_authorization_code",
  token: { access_token: "at", token_type: "bearer", ...token }
})

describe("dueAt", () => {
  it("an authorization-code token is due before_expiry (default 5m) before it expires", () => {
    const stored = code({ expires_at: t0 + 60 * minute, refresh_token: "rt", obtained_at: t0 })
    assert.strictEqual(dueAt(authCode(), stored, defaultLifetime)?.getTime(), t0 + 55 * minute)
    assert.strictEqual(dueAt(authCode({ before_expiry: "10m" }), stored, defaultLifetime)?.getTime(), t0 + 50 * minute)
  })

  it("the window is at most half the token's lifetime", () => {
    const stored = code({ expires_at: t0 + 4 * minute, refresh_token: "rt", obtained_at: t0 })
    assert.strictEqual(dueAt(authCode(), stored, defaultLifetime)?.getTime(), t0 + 2 * minute)
  })

  it("without expires_at the token is due the default lifetime after it was obtained (at once without obtained_at)", () => {
    assert.strictEqual(
      dueAt(authCode(), code({ refresh_token: "rt", obtained_at: t0 }), defaultLifetime)?.getTime(),
      t0 + defaultLifetime
    )
    assert.strictEqual(dueAt(authCode(), code({ refresh_token: "rt" }), defaultLifetime)?.getTime(), defaultLifetime)
  })

  it("nothing is due without a refresh token, with refresh disabled, or for other auth methods", () => {
    assert.isNull(dueAt(authCode(), code({ expires_at: t0 }), defaultLifetime))
    assert.isNull(dueAt(authCode({ enabled: false }), code({ expires_at: t0, refresh_token: "rt" }), defaultLifetime))
    assert.isNull(
      dueAt(definition({ type: "basic" }), { kind: "basic", username: "u", password: "p" }, defaultLifetime)
    )
    assert.isNull(dueAt(clientCredentials, code({ expires_at: t0, refresh_token: "rt" }), defaultLifetime))
  })

  it("client credentials are due 60 s before expiry, whether or not there is a refresh token", () => {
    const stored: StoredCredentials = {
      kind: "oauth2_client_credentials",
      client_id: "c",
      token: { access_token: "at", token_type: "bearer", expires_at: t0 + 60 * minute, obtained_at: t0 }
    }
    assert.strictEqual(dueAt(clientCredentials, stored, defaultLifetime)?.getTime(), t0 + 59 * minute)
    assert.isFalse(isDue(clientCredentials, stored, defaultLifetime, t0 + 59 * minute - 1))
    assert.isTrue(isDue(clientCredentials, stored, defaultLifetime, t0 + 59 * minute))
  })
})

describe("retryAt", () => {
  it("waits as long again as the token has been due: 30 s at first, doubling, at most 10 minutes", () => {
    const due = new Date(t0)
    assert.strictEqual(retryAt(due, t0).getTime(), t0 + 30_000)
    assert.strictEqual(retryAt(due, t0 + 2 * minute).getTime(), t0 + 4 * minute)
    assert.strictEqual(retryAt(due, t0 + 60 * minute).getTime(), t0 + 70 * minute)
    assert.strictEqual(retryAt(null, t0).getTime(), t0 + 30_000)
  })
})
