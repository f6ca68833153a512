/**
 * The `auth` block of a connector definition and the credentials each method takes on a
 * connection (`POST /api/v1/connections`, `PUT /api/v1/connections/{id}/credentials`).
 * Definition fields are snake_case (API-CONVENTIONS).
 */
import { Effect, Schema } from "effect"
import { PositiveDurationString } from "./Duration.ts"

const NonEmpty = Schema.String.check(Schema.isNonEmpty(), Schema.isMaxLength(2048))

/** RFC 7230 token characters: what a header name may contain. */
export const HeaderName = Schema.String.check(
  Schema.makeFilter((value: string) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/.test(value), {
    message: "a header name is 1 to 256 token characters (letters, digits and !#$%&'*+.^_`|~-)"
  })
)

/** The hop-by-hop header names of RFC 9110 7.6.1 (lower case): stripped on both legs of a proxied call. */
export const hopByHopHeaders: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

/** Headers the service owns or strips: an API key may not be placed in them. */
const reservedHeaders = new Set(["host", "content-length", "content-type", ...hopByHopHeaders])

/** The header an `api_key` goes in: any token name except service-owned and hop-by-hop ones. */
const ApiKeyHeaderName = HeaderName.check(
  Schema.makeFilter((value: string) => {
    const lower = value.toLowerCase()
    if (reservedHeaders.has(lower)) return `${value} is owned by the HTTP layer and cannot carry an API key`
    if (lower.startsWith("x-svc-")) return "X-Svc-* headers are the service's own control headers"
    return true
  })
)

/** A query parameter name: non-empty, at most 256 characters, no `&`, `=`, `#` or whitespace. */
export const QueryParamName = Schema.String.check(
  Schema.makeFilter((value: string) => /^[^&=#\s]{1,256}$/.test(value), {
    message: "a query parameter name is 1 to 256 characters without '&', '=', '#' or whitespace"
  })
)

/** Header values the service writes must not carry line breaks or other control characters. */
const HeaderValuePrefix = Schema.String.check(
  Schema.makeFilter((value: string) => /^[\t\x20-\x7e]{0,256}$/.test(value), {
    message: "a header prefix is at most 256 printable ASCII characters"
  })
)

/** An absolute http(s) URL; plain http only for loopback hosts (local development). */
export const EndpointUrl = Schema.String.check(
  Schema.makeFilter(
    (value: string) => {
      let url: URL
      try {
        url = new URL(value)
      } catch {
        return "must be an absolute URL"
      }
      if (url.username !== "" || url.password !== "") return "must not carry credentials"
      if (url.protocol === "https:") return true
      const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname)
      if (url.protocol === "http:" && loopback) return true
      return "must be https (http only for localhost, 127.0.0.1 or [::1])"
    },
    { expected: "an absolute https URL" }
  )
)

/** `auth.type: none`: requests go out without credentials. */
export const NoneAuth = Schema.Struct({ type: Schema.Literal("none") }).annotate({ identifier: "NoneAuth" })

/** `auth.type: api_key` sent as `Authorization: Bearer <key>`. */
export const ApiKeyBearerAuth = Schema.Struct({
  type: Schema.Literal("api_key"),
  placement: Schema.Literal("bearer")
}).annotate({ identifier: "ApiKeyBearerAuth" })

/** `auth.type: api_key` sent in a named header, optionally after a prefix (`Token `). */
export const ApiKeyHeaderAuth = Schema.Struct({
  type: Schema.Literal("api_key"),
  placement: Schema.Literal("header"),
  header_name: ApiKeyHeaderName,
  prefix: Schema.optionalKey(HeaderValuePrefix)
}).annotate({ identifier: "ApiKeyHeaderAuth" })

/** `auth.type: api_key` sent as a query parameter. */
export const ApiKeyQueryAuth = Schema.Struct({
  type: Schema.Literal("api_key"),
  placement: Schema.Literal("query"),
  query_param: QueryParamName
}).annotate({ identifier: "ApiKeyQueryAuth" })

/** `auth.type: basic`: `Authorization: Basic base64(username:password)`. */
export const BasicAuth = Schema.Struct({ type: Schema.Literal("basic") }).annotate({ identifier: "BasicAuth" })

/** One OAuth2 scope; a `required` scope must be granted for the connection to be usable. */
export const OAuth2Scope = Schema.Struct({
  name: Schema.String.check(Schema.isNonEmpty(), Schema.isMaxLength(512)),
  required: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1000)))
}).annotate({ identifier: "OAuth2Scope" })
export type OAuth2Scope = typeof OAuth2Scope.Type

/** How the client authenticates at the token endpoint (RFC 6749 2.3, OAuth 2.1). */
export const ClientAuthMethod = Schema.Literals(["client_secret_post", "client_secret_basic", "none"])
export type ClientAuthMethod = typeof ClientAuthMethod.Type

/** Access-token refresh settings (authorization code grants). */
export const OAuth2Refresh = Schema.Struct({
  enabled: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(true))),
  /** Refresh when the access token expires within this window. */
  before_expiry: PositiveDurationString.pipe(Schema.withDecodingDefaultKey(Effect.succeed("5m")))
})

const oauth2Common = {
  type: Schema.Literal("oauth2"),
  token_endpoint: EndpointUrl,
  revocation_endpoint: Schema.optionalKey(EndpointUrl),
  client_auth: ClientAuthMethod.pipe(Schema.withDecodingDefaultKey(Effect.succeed("client_secret_basic" as const))),
  scopes: Schema.Array(OAuth2Scope).pipe(Schema.withDecodingDefaultKey(Effect.succeed([]))),
  scope_separator: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4)).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(" "))
  ),
  token_params: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
}

/** OAuth2 authorization code with PKCE S256 (interactive: `_initiate`). */
export const OAuth2AuthorizationCodeAuth = Schema.Struct({
  ...oauth2Common,
  grant_type: Schema.Literal("authorization_code"),
  authorization_endpoint: EndpointUrl,
  pkce: Schema.Literal("S256").pipe(Schema.withDecodingDefaultKey(Effect.succeed("S256" as const))),
  authorize_params: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  refresh: OAuth2Refresh.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  /** The connector's registered client id; the secret is server configuration (never in a definition). */
  client_id: Schema.optionalKey(NonEmpty)
}).annotate({ identifier: "OAuth2AuthorizationCodeAuth" })

/** OAuth2 client credentials (server-side creation; the client id and secret are the connection's). */
export const OAuth2ClientCredentialsAuth = Schema.Struct({
  ...oauth2Common,
  grant_type: Schema.Literal("client_credentials")
}).annotate({ identifier: "OAuth2ClientCredentialsAuth" })

/** Every auth method a connector may declare. */
export const ConnectorAuth = Schema.Union([
  NoneAuth,
  ApiKeyBearerAuth,
  ApiKeyHeaderAuth,
  ApiKeyQueryAuth,
  BasicAuth,
  OAuth2AuthorizationCodeAuth,
  OAuth2ClientCredentialsAuth
]).annotate({ identifier: "ConnectorAuth" })
export type ConnectorAuth = typeof ConnectorAuth.Type
export type ApiKeyAuth = typeof ApiKeyBearerAuth.Type | typeof ApiKeyHeaderAuth.Type | typeof ApiKeyQueryAuth.Type
export type OAuth2Auth = typeof OAuth2AuthorizationCodeAuth.Type | typeof OAuth2ClientCredentialsAuth.Type

/** The auth method names. */
export const AuthType = Schema.Literals(["none", "api_key", "basic", "oauth2"])
export type AuthType = typeof AuthType.Type

const Secret = Schema.String.check(Schema.isNonEmpty(), Schema.isMaxLength(8192))

/** Credentials of an `api_key` connection. */
export const ApiKeyCredentials = Schema.Struct({ api_key: Secret })
export type ApiKeyCredentials = typeof ApiKeyCredentials.Type

/** Credentials of a `basic` connection (the username may not contain `:`, RFC 7617). */
export const BasicCredentials = Schema.Struct({
  username: Schema.String.check(
    Schema.isMaxLength(1024),
    Schema.makeFilter((value: string) => !value.includes(":") || "must not contain ':'")
  ),
  password: Schema.String.check(Schema.isMaxLength(8192))
})
export type BasicCredentials = typeof BasicCredentials.Type

/** What a client-credentials connection is given: its client id and (unless `client_auth: none`) secret. */
export const ClientCredentialsInput = Schema.Struct({
  client_id: NonEmpty,
  client_secret: Schema.optionalKey(Secret)
})
export type ClientCredentialsInput = typeof ClientCredentialsInput.Type

/** An OAuth2 token set as stored (encrypted) on a connection. */
export const OAuth2TokenSet = Schema.Struct({
  access_token: Secret,
  token_type: Schema.String,
  /** Epoch milliseconds; absent when the provider gave no `expires_in`. */
  expires_at: Schema.optionalKey(Schema.Number),
  refresh_token: Schema.optionalKey(Secret),
  scope: Schema.optionalKey(Schema.String),
  /** Epoch milliseconds when the token set was obtained (older rows lack it). */
  obtained_at: Schema.optionalKey(Schema.Number)
})
export type OAuth2TokenSet = typeof OAuth2TokenSet.Type

/** The stored (encrypted) credentials of a connection, by auth method. */
export type StoredCredentials =
  | { readonly kind: "api_key"; readonly api_key: string }
  | { readonly kind: "basic"; readonly username: string; readonly password: string }
  | {
      readonly kind: "oauth2_client_credentials"
      readonly client_id: string
      readonly client_secret?: string
      readonly token: OAuth2TokenSet
    }
  | { readonly kind: "oauth2_authorization_code"; readonly token: OAuth2TokenSet }

/** Schema of the stored credentials (decoding of our own decrypted rows). */
export const StoredCredentials: Schema.Codec<StoredCredentials> = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("api_key"), api_key: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("basic"), username: Schema.String, password: Schema.String }),
  Schema.Struct({
    kind: Schema.Literal("oauth2_client_credentials"),
    client_id: Schema.String,
    client_secret: Schema.optionalKey(Schema.String),
    token: OAuth2TokenSet
  }),
  Schema.Struct({ kind: Schema.Literal("oauth2_authorization_code"), token: OAuth2TokenSet })
])
