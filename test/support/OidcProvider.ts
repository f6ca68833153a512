/**
 * Typed access to oidc-provider (which ships no type declarations) for the OAuth test harness:
 * the few model and context shapes the harness uses, quiet construction, the library's error
 * classes, and an in-memory storage adapter whose `Client` registry can change after start.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
// @ts-expect-error -- oidc-provider ships no type declarations; the parts used are typed in this file.
import * as oidc from "oidc-provider"

/** An oidc-provider token model instance (opaque format). */
export interface Token {
  readonly kind: string
  readonly clientId?: string
  readonly accountId?: string
  readonly scope?: string
  readonly aud?: string | ReadonlyArray<string>
  readonly isExpired: boolean
  destroy(): Promise<void>
}
/** An oidc-provider token model class. */
export interface TokenModel {
  find(value: string): Promise<Token | undefined>
}
/** The `ctx.oidc` parts the harness reads. */
export interface OidcContext {
  readonly params?: Record<string, unknown>
  readonly entities: Record<string, { readonly kind?: string } | undefined>
  readonly client?: { readonly clientId: string }
}
/** The Koa context parts the harness reads and writes. */
export interface KoaContext {
  readonly method: string
  readonly path: string
  readonly req: IncomingMessage
  readonly oidc?: OidcContext
  status: number
  body: unknown
  type: string
}
/** An oidc-provider client model instance. */
export interface ClientModel {
  readonly clientId: string
  readonly clientAuthMethod: string
  grantTypeAllowed(grantType: string): boolean
}
/** An oidc-provider instance (a Koa application). */
export interface Provider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void
  on(event: string, listener: (...args: Array<unknown>) => void): void
  readonly AccessToken: TokenModel
  readonly ClientCredentials: TokenModel
  readonly RefreshToken: TokenModel
  readonly Client: { find(id: string): Promise<ClientModel | undefined> }
}

type Stored = { payload: Record<string, unknown>; expiresAt: number }
const grantable = new Set(["AccessToken", "AuthorizationCode", "RefreshToken", "DeviceCode"])

/** An in-memory oidc-provider adapter; `Client` reads come from `clients` so clients can be added at any time. */
export const memoryAdapter = (clients: Map<string, Record<string, unknown>>) => {
  const store = new Map<string, Stored>()
  const grants = new Map<string, Set<string>>()
  const read = (key: string) => {
    const stored = store.get(key)
    if (stored !== undefined && stored.expiresAt <= Date.now()) store.delete(key)
    return stored !== undefined && stored.expiresAt > Date.now() ? stored.payload : undefined
  }
  const factory = (model: string) => ({
    find: async (id: string) => (model === "Client" ? structuredClone(clients.get(id)) : read(`${model}:${id}`)),
    findByUid: async (uid: string) => {
      const id = read(`uid:${uid}`)?.id
      return typeof id === "string" ? read(`${model}:${id}`) : undefined
    },
    findByUserCode: async () => undefined,
    upsert: async (id: string, payload: Record<string, unknown>, expiresIn?: number) => {
      const expiresAt = typeof expiresIn === "number" ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY
      const key = `${model}:${id}`
      store.set(key, { payload, expiresAt })
      if (model === "Session" && typeof payload.uid === "string")
        store.set(`uid:${payload.uid}`, { payload: { id }, expiresAt })
      if (grantable.has(model) && typeof payload.grantId === "string") {
        grants.set(payload.grantId, (grants.get(payload.grantId) ?? new Set()).add(key))
      }
    },
    consume: async (id: string) => {
      const payload = read(`${model}:${id}`)
      if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000)
    },
    destroy: async (id: string) => {
      store.delete(`${model}:${id}`)
    },
    revokeByGrantId: async (grantId: string) => {
      for (const key of grants.get(grantId) ?? []) store.delete(key)
      grants.delete(grantId)
    }
  })
  /** Forgets every stored instance of `model` (e.g. all refresh tokens): a test lever. */
  const dropAll = (model: string) => {
    for (const key of [...store.keys()]) if (key.startsWith(`${model}:`)) store.delete(key)
  }
  return Object.assign(factory, { dropAll })
}

/** Escapes text for HTML element content and attribute values. */
export const escapeHtml = (value: unknown) => String(value).replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

const ProviderClass = oidc.default as new (issuer: string, configuration: object) => Provider

/** oidc-provider's OAuth error classes (thrown from configuration callbacks they become error responses). */
export const oidcErrors = oidc.errors as Record<"InvalidRequest" | "InvalidTarget", new (description?: string) => Error>

/** Constructs a provider with its start-up notices (devInteractions, …) kept off the console. */
export const constructProvider = (issuer: string, configuration: object): Provider => {
  const { warn, info } = console
  const filter =
    (original: (...args: Array<unknown>) => void) =>
    (...args: Array<unknown>) => {
      if (!String(args[0]).startsWith("oidc-provider ")) original(...args)
    }
  console.warn = filter(warn)
  console.info = filter(info)
  try {
    return new ProviderClass(issuer, configuration)
  } finally {
    console.warn = warn
    console.info = info
  }
}
