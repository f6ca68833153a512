/**
 * Proves the OAuth harness against itself (no svc): authorization code + PKCE through the
 * provider's own login and consent forms, both secret-based client authentications, refresh with
 * rotation, server-side and RFC 7009 revocation, client credentials, the fault and `expires_in`
 * levers, and the protected resource's 200/401 answers.
 */
import { createHash, randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { makeBrowser } from "./Browser.ts"
import { type OAuthProvider, startOAuthProvider } from "./OAuthProvider.ts"

interface TokenBody {
  readonly access_token?: string
  readonly refresh_token?: string
  readonly id_token?: string
  readonly token_type?: string
  readonly expires_in?: number
  readonly scope?: string
  readonly error?: string
}

let provider: OAuthProvider
let callback: Server
let redirectUri: string

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`

const tokenCall = async (form: Record<string, string>, authorization?: string) => {
  const response = await fetch(provider.endpoints.token, {
    method: "POST",
    headers: authorization === undefined ? {} : { authorization },
    body: new URLSearchParams(form)
  })
  return { status: response.status, body: (await response.json()) as TokenBody }
}

const resourceCall = async (token: string | undefined, path?: string) => {
  const response = await fetch(provider.endpoints.resource(path), {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
  })
  return { status: response.status, challenge: response.headers.get("www-authenticate"), body: await response.json() }
}

/** Runs the browser through login and consent for `clientId`; answers the code, its verifier and the journey. */
const authorize = async (clientId: string, scope: string, extra: Record<string, string> = {}) => {
  const verifier = randomBytes(32).toString("base64url")
  const url = new URL(provider.endpoints.authorization)
  const params = {
    client_id: clientId,
    response_type: "code",
    redirect_uri: redirectUri,
    scope,
    state: "state-1",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    ...extra
  }
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  const browser = makeBrowser()
  const journey = await browser.authorizeAtProvider(url.href, {
    login: "alice",
    stopAt: (to) => to.startsWith(redirectUri)
  })
  const landed = new URL(journey.stoppedAt ?? journey.final.url)
  return { browser, journey, verifier, code: landed.searchParams.get("code") ?? "", landed }
}

const codeGrant = (code: string, verifier: string) => ({
  grant_type: "authorization_code",
  code,
  redirect_uri: redirectUri,
  code_verifier: verifier
})

beforeAll(async () => {
  callback = createServer((_req, res) => res.end("callback"))
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve))
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`
  provider = await startOAuthProvider({
    clients: [
      {
        client_id: "web-basic",
        client_secret: "basic-secret",
        token_endpoint_auth_method: "client_secret_basic",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"]
      },
      {
        client_id: "web-post",
        client_secret: "post-secret",
        token_endpoint_auth_method: "client_secret_post",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"]
      },
      {
        client_id: "machine",
        client_secret: "machine-secret",
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["client_credentials"],
        scope: "read write"
      }
    ]
  })
})

afterAll(async () => {
  await provider?.close()
  await new Promise((resolve) => callback?.close(resolve))
})

beforeEach(() => {
  provider.reset()
  provider.failTokenEndpoint(undefined)
  provider.omitExpiresIn(false)
  provider.setAccessTokenTtl(3600)
})

describe("OAuthProvider harness", () => {
  it("authorization code + PKCE through login and consent forms, client_secret_basic, resource 200", async () => {
    const { browser, journey, verifier, code, landed } = await authorize("web-basic", "read write")
    const posts = journey.hops.filter((hop) => hop.method === "POST")
    expect(posts.map((hop) => new URL(hop.url).pathname.split("/")[1])).toEqual(["interaction", "interaction"])
    expect(landed.searchParams.get("state")).toBe("state-1")
    expect(landed.searchParams.get("iss")).toBe(provider.issuer)
    expect(code).not.toBe("")
    expect(browser.cookie(provider.issuer, "_session")?.httpOnly).toBe(true)

    const { status, body } = await tokenCall(codeGrant(code, verifier), basic("web-basic", "basic-secret"))
    expect(status).toBe(200)
    expect(body.token_type).toBe("Bearer")
    expect(body.expires_in).toBe(3600)
    expect(body.scope?.split(" ").sort()).toEqual(["read", "write"])
    expect(typeof body.refresh_token).toBe("string")

    const resource = await resourceCall(body.access_token)
    expect(resource.status).toBe(200)
    expect(resource.body).toEqual({ sub: "alice", client_id: "web-basic", scope: "read write", path: "/api/resource" })
    expect(provider.tokenCount("authorization_code", "success")).toBe(1)
    expect(provider.resourceRequests()).toEqual([
      { method: "GET", path: "/api/resource", status: 200, clientId: "web-basic" }
    ])

    const replay = await tokenCall(codeGrant(code, verifier), basic("web-basic", "basic-secret"))
    expect(replay).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect(provider.tokenRequests().at(-1)).toMatchObject({
      grantType: "authorization_code",
      ok: false,
      error: "invalid_grant"
    })
  })

  it("client_secret_post with openid offline_access: id_token, refresh token, resource scope only", async () => {
    const { code, verifier } = await authorize("web-post", "openid offline_access read", { prompt: "consent" })
    const { status, body } = await tokenCall({
      ...codeGrant(code, verifier),
      client_id: "web-post",
      client_secret: "post-secret"
    })
    expect(status).toBe(200)
    expect(body.scope).toBe("read")
    expect(typeof body.id_token).toBe("string")
    expect(typeof body.refresh_token).toBe("string")
    expect((await resourceCall(body.access_token)).body).toMatchObject({ client_id: "web-post", scope: "read" })
    const wrongAuth = await tokenCall({ ...codeGrant(code, verifier), client_id: "web-post", client_secret: "nope" })
    expect(wrongAuth).toMatchObject({ status: 401, body: { error: "invalid_client" } })
  })

  it("refuses an authorization request without PKCE and a code exchange with the wrong verifier", async () => {
    const refused = await authorize("web-basic", "read", { code_challenge: "", code_challenge_method: "" })
    expect(refused.landed.searchParams.get("error")).toBe("invalid_request")
    const { code } = await authorize("web-basic", "read")
    const wrong = await tokenCall(codeGrant(code, "x".repeat(43)), basic("web-basic", "basic-secret"))
    expect(wrong).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
  })

  it("refresh rotates the refresh token; revokeToken makes the next refresh invalid_grant", async () => {
    const { code, verifier } = await authorize("web-basic", "read write")
    const first = (await tokenCall(codeGrant(code, verifier), basic("web-basic", "basic-secret"))).body
    const refreshed = await tokenCall(
      { grant_type: "refresh_token", refresh_token: first.refresh_token ?? "" },
      basic("web-basic", "basic-secret")
    )
    expect(refreshed.status).toBe(200)
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token)
    expect(refreshed.body.scope?.split(" ").sort()).toEqual(["read", "write"])
    expect(provider.tokenCount("refresh_token", "success")).toBe(1)

    expect(await provider.revokeToken(refreshed.body.refresh_token ?? "")).toBe("refresh_token")
    const after = await tokenCall(
      { grant_type: "refresh_token", refresh_token: refreshed.body.refresh_token ?? "" },
      basic("web-basic", "basic-secret")
    )
    expect(after).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect(provider.tokenCount("refresh_token", "failure")).toBe(1)
    expect(provider.tokenRequests().at(-1)).toMatchObject({
      clientId: "web-basic",
      error: "invalid_grant",
      injected: false
    })

    expect(await provider.revokeToken(refreshed.body.access_token ?? "")).toBe("access_token")
    expect((await resourceCall(refreshed.body.access_token)).status).toBe(401)
    expect(await provider.revokeToken("unknown")).toBeUndefined()
  })

  it("keeps the refresh token when rotation is off", async () => {
    provider.setRotateRefreshToken(false)
    try {
      const { code, verifier } = await authorize("web-basic", "write")
      const first = (await tokenCall(codeGrant(code, verifier), basic("web-basic", "basic-secret"))).body
      const refresh = { grant_type: "refresh_token", refresh_token: first.refresh_token ?? "" }
      const again = await tokenCall(refresh, basic("web-basic", "basic-secret"))
      expect(again.status).toBe(200)
      expect(again.body.refresh_token).toBe(first.refresh_token)
      expect(again.body.access_token).not.toBe(first.access_token)
      expect((await tokenCall(refresh, basic("web-basic", "basic-secret"))).status).toBe(200)
    } finally {
      provider.setRotateRefreshToken(true)
    }
  })

  it("counts RFC 7009 revocation calls with the hint and the kind of token presented", async () => {
    const grantTokens = async () => {
      const { code, verifier } = await authorize("web-post", "read")
      return (await tokenCall({ ...codeGrant(code, verifier), client_id: "web-post", client_secret: "post-secret" }))
        .body
    }
    const revoke = (token: string, hint: string) =>
      fetch(provider.endpoints.revocation, {
        method: "POST",
        body: new URLSearchParams({ token, token_type_hint: hint, client_id: "web-post", client_secret: "post-secret" })
      })
    const first = await grantTokens()
    expect((await revoke(first.refresh_token ?? "", "refresh_token")).status).toBe(200)
    const refresh = await tokenCall({
      grant_type: "refresh_token",
      refresh_token: first.refresh_token ?? "",
      client_id: "web-post",
      client_secret: "post-secret"
    })
    expect(refresh).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    // oidc-provider revokes the whole grant: the access token of the same grant is gone too.
    expect((await resourceCall(first.access_token)).status).toBe(401)
    expect((await revoke(first.access_token ?? "", "access_token")).status).toBe(200)

    const second = await grantTokens()
    expect((await revoke(second.access_token ?? "", "access_token")).status).toBe(200)
    expect((await resourceCall(second.access_token)).status).toBe(401)
    expect(provider.revocations()).toEqual([
      { tokenTypeHint: "refresh_token", tokenKind: "refresh_token", clientId: "web-post", status: 200 },
      { tokenTypeHint: "access_token", tokenKind: undefined, clientId: "web-post", status: 200 },
      { tokenTypeHint: "access_token", tokenKind: "access_token", clientId: "web-post", status: 200 }
    ])
  })

  it("client credentials: scoped token without refresh token, usable at the resource; scope allow-list", async () => {
    const { status, body } = await tokenCall(
      { grant_type: "client_credentials", scope: "read" },
      basic("machine", "machine-secret")
    )
    expect(status).toBe(200)
    expect(body.scope).toBe("read")
    expect(body.refresh_token).toBeUndefined()
    const resource = await resourceCall(body.access_token, "/things/1?x=y")
    expect(resource.body).toEqual({ client_id: "machine", scope: "read", path: "/api/things/1?x=y" })
    const introspection = await fetch(provider.endpoints.introspection, {
      method: "POST",
      headers: { authorization: basic("machine", "machine-secret") },
      body: new URLSearchParams({ token: body.access_token ?? "" })
    })
    expect(await introspection.json()).toMatchObject({ active: true, client_id: "machine", scope: "read" })
    const denied = await tokenCall(
      { grant_type: "client_credentials", scope: "admin" },
      basic("machine", "machine-secret")
    )
    expect(denied).toMatchObject({ status: 400, body: { error: "invalid_scope" } })
    expect(provider.tokenCount("client_credentials", "success")).toBe(1)
    expect(provider.tokenCount("client_credentials", "failure")).toBe(1)
  })

  it("failTokenEndpoint answers the status with a JSON error and counts it as an injected failure", async () => {
    provider.failTokenEndpoint(503)
    const failed = await tokenCall(
      { grant_type: "client_credentials", scope: "read" },
      basic("machine", "machine-secret")
    )
    expect(failed).toEqual({
      status: 503,
      body: { error: "temporarily_unavailable", error_description: "injected token endpoint fault" }
    })
    expect(provider.tokenRequests()).toEqual([
      {
        grantType: "client_credentials",
        clientId: "machine",
        ok: false,
        status: 503,
        error: "temporarily_unavailable",
        injected: true
      }
    ])
    provider.failTokenEndpoint(undefined)
    expect((await tokenCall({ grant_type: "client_credentials" }, basic("machine", "machine-secret"))).status).toBe(200)
  })

  it("omitExpiresIn strips expires_in from token responses", async () => {
    provider.omitExpiresIn(true)
    const without = await tokenCall(
      { grant_type: "client_credentials", scope: "read" },
      basic("machine", "machine-secret")
    )
    expect(without.status).toBe(200)
    expect("expires_in" in without.body).toBe(false)
    provider.omitExpiresIn(false)
    const withIt = await tokenCall(
      { grant_type: "client_credentials", scope: "read" },
      basic("machine", "machine-secret")
    )
    expect(withIt.body.expires_in).toBe(3600)
  })

  it("the resource answers 401 to a missing, bogus or expired token", async () => {
    const missing = await resourceCall(undefined)
    expect(missing.status).toBe(401)
    const bogus = await resourceCall("not-a-token")
    expect(bogus.status).toBe(401)
    expect(bogus.challenge).toBe('Bearer error="invalid_token"')

    provider.setAccessTokenTtl(1)
    const { body } = await tokenCall(
      { grant_type: "client_credentials", scope: "read" },
      basic("machine", "machine-secret")
    )
    expect(body.expires_in).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const expired = await resourceCall(body.access_token)
    expect(expired.status).toBe(401)
    expect(expired.challenge).toBe('Bearer error="invalid_token"')
    expect(provider.resourceRequests().map((record) => record.status)).toEqual([401, 401, 401])
  })

  it("accepts clients added after start", async () => {
    await provider.addClient({
      client_id: "late",
      token_endpoint_auth_method: "none",
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"]
    })
    const { code, verifier } = await authorize("late", "admin")
    const { status, body } = await tokenCall({ ...codeGrant(code, verifier), client_id: "late" })
    expect(status).toBe(200)
    expect(body.scope).toBe("admin")
    await expect(
      provider.addClient({
        client_id: "broken",
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["client_credentials"]
      })
    ).rejects.toThrow()
    expect(provider.serverErrors()).toEqual([])
  })
})
