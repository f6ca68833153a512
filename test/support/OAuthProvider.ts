/**
 * A real OAuth 2.0 authorization server for black-box tests: oidc-provider on 127.0.0.1 (plain
 * http, ephemeral port) with authorization code + PKCE (S256, required), refresh tokens, client
 * credentials, RFC 7009 revocation and introspection, its own login and consent HTML forms
 * (devInteractions), and a protected resource under `/api/` on the same listener. Test levers:
 * runtime access-token TTL, `expires_in` stripping, injected token-endpoint faults, server-side
 * token revocation, and counters of what the server saw (never a token value).
 */
import { generateKeyPairSync, randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import {
  type ClientModel,
  constructProvider,
  escapeHtml,
  type KoaContext,
  memoryAdapter,
  oidcErrors,
  type Token
} from "./OidcProvider.ts"

/** A grant type the harness counts. */
export type GrantType = "authorization_code" | "refresh_token" | "client_credentials"

/** A client registration (RFC 7591 metadata names). */
export interface OAuthClient {
  readonly client_id: string
  readonly client_secret?: string
  readonly token_endpoint_auth_method: "client_secret_basic" | "client_secret_post" | "none"
  readonly redirect_uris?: ReadonlyArray<string>
  readonly grant_types: ReadonlyArray<GrantType>
  /** Space-separated allow-list (of `openid offline_access read write admin`); absent allows all. */
  readonly scope?: string
}

/** Options of `startOAuthProvider`. */
export interface OAuthProviderOptions {
  readonly clients?: ReadonlyArray<OAuthClient>
  /** Access-token (and client-credentials token) lifetime in seconds; default 3600. */
  readonly accessTokenTtl?: number
  /** Rotate the refresh token on every refresh; default true. */
  readonly rotateRefreshToken?: boolean
}

/** One token-endpoint request as the server answered it (no token, code or secret). */
export interface TokenRequestRecord {
  readonly grantType: string
  readonly clientId: string | undefined
  readonly ok: boolean
  readonly status: number
  /** The OAuth error code of a failure. */
  readonly error: string | undefined
  /** True when `failTokenEndpoint` answered instead of the provider. */
  readonly injected: boolean
}

/** The kind of token a revocation request presented, as the server found it. */
export type TokenKind = "access_token" | "refresh_token" | "client_credentials"

/** One revocation-endpoint request. `tokenKind` is undefined when the token was unknown (still 200). */
export interface RevocationRecord {
  readonly tokenTypeHint: string | undefined
  readonly tokenKind: TokenKind | undefined
  readonly clientId: string | undefined
  readonly status: number
}

/** One protected-resource request. */
export interface ResourceRecord {
  readonly method: string
  readonly path: string
  readonly status: number
  readonly clientId: string | undefined
}

/** A running authorization server with its protected resource. */
export interface OAuthProvider {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly issuer: string
  /** The resource indicator / audience of the access tokens: `<issuer>/api/`. */
  readonly resourceIndicator: string
  readonly endpoints: {
    readonly authorization: string
    readonly token: string
    readonly revocation: string
    readonly introspection: string
    /** `resource("x/y")` and `resource("/x/y")` are both `<issuer>/api/x/y`. */
    readonly resource: (path?: string) => string
  }
  /** Registers (or replaces) a client; works after start. Rejects invalid metadata. */
  readonly addClient: (client: OAuthClient) => Promise<void>
  readonly removeClient: (clientId: string) => void
  /** Lifetime of access tokens issued from now on. */
  readonly setAccessTokenTtl: (seconds: number) => void
  readonly setRotateRefreshToken: (rotate: boolean) => void
  /** Strips `expires_in` from successful token-endpoint responses while on. */
  readonly omitExpiresIn: (omit: boolean) => void
  /** Makes POST /token answer this status with a JSON error body (`undefined` restores). */
  readonly failTokenEndpoint: (status: number | undefined, error?: string) => void
  /** Destroys an access, client-credentials or refresh token server-side; answers what it was. */
  readonly revokeToken: (value: string) => Promise<TokenKind | undefined>
  /** Destroys every issued token of a kind server-side (refresh → later refreshes get `invalid_grant`). */
  readonly revokeAll: (kind: "refresh_token" | "access_token") => void
  readonly tokenRequests: () => ReadonlyArray<TokenRequestRecord>
  /** Token requests of this grant type that succeeded (`ok`) or failed. */
  readonly tokenCount: (grantType: GrantType, outcome: "success" | "failure") => number
  readonly revocations: () => ReadonlyArray<RevocationRecord>
  readonly resourceRequests: () => ReadonlyArray<ResourceRecord>
  /** Unexpected provider errors (messages only); a healthy run has none. */
  readonly serverErrors: () => ReadonlyArray<string>
  /** Clears every record above. */
  readonly reset: () => void
  readonly close: () => Promise<void>
}

const readForm = async (req: IncomingMessage): Promise<URLSearchParams> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"))
}

const basicClientId = (header: string | undefined): string | undefined => {
  const match = /^Basic\s+(\S+)$/i.exec(header ?? "")
  if (match?.[1] === undefined) return undefined
  const decoded = Buffer.from(match[1], "base64").toString("utf8")
  return decodeURIComponent(decoded.slice(0, Math.max(decoded.indexOf(":"), 0)))
}

const kindOf = (kind: string | undefined): TokenKind | undefined =>
  kind === "AccessToken"
    ? "access_token"
    : kind === "RefreshToken"
      ? "refresh_token"
      : kind === "ClientCredentials"
        ? "client_credentials"
        : undefined

/** Starts the authorization server and its protected resource on 127.0.0.1 (ephemeral port). */
/**
 * The `auth` block of an authorization-code connector for `provider`'s `svc-web` client: its
 * authorization, token and revocation endpoints, HTTP basic client authentication, `scopes`.
 */
export const authorizationCodeAuth = (
  provider: OAuthProvider,
  scopes: ReadonlyArray<{ readonly name: string; readonly required?: boolean }>
) => ({
  type: "oauth2",
  grant_type: "authorization_code",
  authorization_endpoint: provider.endpoints.authorization,
  token_endpoint: provider.endpoints.token,
  revocation_endpoint: provider.endpoints.revocation,
  client_id: "svc-web",
  client_auth: "client_secret_basic",
  scopes
})

export const startOAuthProvider = async (options: OAuthProviderOptions = {}): Promise<OAuthProvider> => {
  const clients = new Map<string, Record<string, unknown>>()
  const adapter = memoryAdapter(clients)
  const state = {
    ttl: options.accessTokenTtl ?? 3600,
    rotate: options.rotateRefreshToken ?? true,
    omitExpiresIn: false,
    fail: undefined as { status: number; error: string } | undefined
  }
  let tokens: Array<TokenRequestRecord> = []
  let revocations: Array<RevocationRecord> = []
  let resources: Array<ResourceRecord> = []
  let serverErrors: Array<string> = []

  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end()
  const server = createServer((req, res) => handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const resourceIndicator = `${issuer}/api/`

  const fail = async (error: unknown): Promise<never> => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    throw error
  }
  const provider = constructProvider(issuer, {
    adapter,
    jwks: { keys: [generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" })] },
    cookies: { keys: [randomBytes(32).toString("hex")] },
    scopes: ["openid", "offline_access", "read", "write", "admin"],
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
    pkce: { required: () => true },
    issueRefreshToken: async (_ctx: unknown, client: ClientModel) => client.grantTypeAllowed("refresh_token"),
    rotateRefreshToken: () => state.rotate,
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: () => state.ttl,
      ClientCredentials: () => state.ttl,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 14 * 24 * 3600,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      Grant: 14 * 24 * 3600
    },
    renderError: async (ctx: KoaContext, out: Record<string, unknown>) => {
      ctx.type = "html"
      ctx.body = `<!DOCTYPE html><html><body><h1>error</h1>${Object.entries(out)
        .map(([key, value]) => `<p id="${escapeHtml(key)}">${escapeHtml(value)}</p>`)
        .join("")}</body></html>`
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: async () => true },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: ClientModel, token: Token) => {
          if (token.clientId === client.clientId) return true
          if (client.clientAuthMethod === "none") return false
          throw new oidcErrors.InvalidRequest("client is not authorized to revoke the presented token")
        }
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => resourceIndicator,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, indicator: string) => {
          if (indicator !== resourceIndicator) throw new oidcErrors.InvalidTarget()
          return { scope: "read write admin", audience: resourceIndicator, accessTokenFormat: "opaque" }
        }
      },
      rpInitiatedLogout: { enabled: false }
    }
  })
  provider.on("server_error", (_ctx, error) => serverErrors.push(String((error as Error)?.message)))
  provider.on("error", (error) => serverErrors.push(String((error as Error)?.message)))

  provider.use(async (ctx, next) => {
    if (ctx.method !== "POST" || (ctx.path !== "/token" && ctx.path !== "/token/revocation")) return next()
    if (ctx.path === "/token/revocation") {
      await next()
      const entities = ctx.oidc?.entities ?? {}
      const token = entities.RefreshToken ?? entities.AccessToken ?? entities.ClientCredentials
      const hint = ctx.oidc?.params?.token_type_hint
      revocations.push({
        tokenTypeHint: typeof hint === "string" ? hint : undefined,
        tokenKind: kindOf(token?.kind),
        clientId: ctx.oidc?.client?.clientId,
        status: ctx.status
      })
      return
    }
    if (state.fail !== undefined) {
      const form = await readForm(ctx.req)
      tokens.push({
        grantType: form.get("grant_type") ?? "",
        clientId: form.get("client_id") ?? basicClientId(ctx.req.headers.authorization),
        ok: false,
        status: state.fail.status,
        error: state.fail.error,
        injected: true
      })
      ctx.status = state.fail.status
      ctx.body = { error: state.fail.error, error_description: "injected token endpoint fault" }
      return
    }
    await next()
    const body = (typeof ctx.body === "object" && ctx.body !== null ? ctx.body : {}) as Record<string, unknown>
    const ok = ctx.status === 200
    if (ok && state.omitExpiresIn) delete body.expires_in
    const grantType = ctx.oidc?.params?.grant_type
    tokens.push({
      grantType: typeof grantType === "string" ? grantType : "",
      clientId: ctx.oidc?.client?.clientId,
      ok,
      status: ctx.status,
      error: ok ? undefined : typeof body.error === "string" ? body.error : "unknown",
      injected: false
    })
  })

  const resource = async (req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    const path = req.url ?? "/"
    const answer = (status: number, clientId: string | undefined, headers: Record<string, string>, body: unknown) => {
      resources.push({ method: req.method ?? "GET", path, status, clientId })
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers })
      res.end(JSON.stringify(body))
    }
    const value = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1]
    if (value === undefined) {
      return answer(401, undefined, { "www-authenticate": 'Bearer realm="resource"' }, { error: "unauthorized" })
    }
    const token = (await provider.AccessToken.find(value)) ?? (await provider.ClientCredentials.find(value))
    const audience = typeof token?.aud === "string" ? [token.aud] : (token?.aud ?? [])
    if (token === undefined || token.isExpired || !audience.includes(resourceIndicator)) {
      return answer(401, undefined, { "www-authenticate": 'Bearer error="invalid_token"' }, { error: "invalid_token" })
    }
    const body = { sub: token.accountId, client_id: token.clientId, scope: token.scope ?? "", path }
    return answer(200, token.clientId, {}, body)
  }

  const providerCallback = provider.callback()
  handle = (req, res) => {
    if ((req.url ?? "").startsWith("/api/")) {
      resource(req, res).catch((error: unknown) => {
        serverErrors.push(String((error as Error)?.message))
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    } else {
      providerCallback(req, res)
    }
  }

  const addClient = async (client: OAuthClient) => {
    const usesCode = client.grant_types.includes("authorization_code")
    clients.set(client.client_id, { ...client, response_types: usesCode ? ["code"] : [] })
    await provider.Client.find(client.client_id).catch((error: unknown) => {
      clients.delete(client.client_id)
      throw error
    })
  }
  for (const client of options.clients ?? []) await addClient(client).catch(fail)

  const revokeToken = async (value: string): Promise<TokenKind | undefined> => {
    for (const model of [provider.AccessToken, provider.ClientCredentials, provider.RefreshToken]) {
      const token = await model.find(value)
      if (token !== undefined) {
        await token.destroy()
        return kindOf(token.kind)
      }
    }
    return undefined
  }

  return {
    issuer,
    resourceIndicator,
    endpoints: {
      authorization: `${issuer}/auth`,
      token: `${issuer}/token`,
      revocation: `${issuer}/token/revocation`,
      introspection: `${issuer}/token/introspection`,
      resource: (path = "resource") => `${resourceIndicator}${path.replace(/^\/+/, "")}`
    },
    addClient,
    removeClient: (clientId) => {
      clients.delete(clientId)
    },
    setAccessTokenTtl: (seconds) => {
      if (!Number.isInteger(seconds) || seconds <= 0) throw new Error("access token TTL must be a positive integer")
      state.ttl = seconds
    },
    setRotateRefreshToken: (rotate) => {
      state.rotate = rotate
    },
    omitExpiresIn: (omit) => {
      state.omitExpiresIn = omit
    },
    failTokenEndpoint: (status, error) => {
      state.fail =
        status === undefined
          ? undefined
          : {
              status,
              error:
                error ??
                (status === 503 ? "temporarily_unavailable" : status >= 500 ? "server_error" : "invalid_request")
            }
    },
    revokeToken,
    revokeAll: (kind) => adapter.dropAll(kind === "refresh_token" ? "RefreshToken" : "AccessToken"),
    tokenRequests: () => [...tokens],
    tokenCount: (grantType, outcome) =>
      tokens.filter((record) => record.grantType === grantType && record.ok === (outcome === "success")).length,
    revocations: () => [...revocations],
    resourceRequests: () => [...resources],
    serverErrors: () => [...serverErrors],
    reset: () => {
      tokens = []
      revocations = []
      resources = []
      serverErrors = []
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
