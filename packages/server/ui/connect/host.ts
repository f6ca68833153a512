/**
 * The Connect UI's side of the embedding contract (docs/ui.md): which window hosts it (the parent
 * of an iframe or the opener of a popup), the host's origin (only one of
 * `host_application.allowed_origins`, never `*`) and the messages posted to it. The theme the host
 * asks for in the URL is applied by shared/theme.ts.
 */
import { hasFields } from "../shared/api.ts"

/** What `GET /connect/config.json` answers. */
export interface ConnectConfig {
  readonly hostOrigins: ReadonlyArray<string>
  readonly publicBaseUrl: string
}

/** Whether an answer of `/connect/config.json` is a {@link ConnectConfig}. */
export const isConnectConfig = hasFields<ConnectConfig>({ hostOrigins: "strings", publicBaseUrl: "string" })

/** A message the Connect UI posts to its host. */
export type HostMessage =
  | {
      readonly type: "svc:connect:completed"
      readonly connectionId: string
      readonly connectorId: string
      readonly state: string
    }
  | { readonly type: "svc:connect:disconnected"; readonly connectionId: string }
  | {
      readonly type: "svc:connect:error"
      readonly code: string
      readonly message: string
      readonly connectionId?: string
    }
  | { readonly type: "svc:connect:close" }

const storageKey = "svc-connect-host-origin"

const originOf = (text: string | null | undefined): string | undefined => {
  if (text === null || text === undefined || text === "") return undefined
  try {
    return new URL(text).origin
  } catch {
    return undefined
  }
}

/** The window hosting the UI: the iframe's parent, else the popup's opener, else none. */
export const hostWindow = (): Window | undefined => {
  if (window.parent !== window) return window.parent
  if (window.opener !== null && window.opener !== undefined) return window.opener as Window
  return undefined
}

/**
 * The host's origin when it is an allowed one: the frame's ancestor origin (Chromium, Safari),
 * else `host_origin` from the URL (kept for this tab across sign-in redirects), else none.
 */
export const resolveHostOrigin = (config: ConnectConfig): string | undefined => {
  const allowed = new Set(config.hostOrigins)
  const params = new URLSearchParams(location.search)
  const fromParam = originOf(params.get("host_origin"))
  if (fromParam !== undefined && allowed.has(fromParam)) sessionStorage.setItem(storageKey, fromParam)
  const candidates = [
    window.parent !== window ? location.ancestorOrigins?.[0] : undefined,
    fromParam,
    sessionStorage.getItem(storageKey) ?? undefined
  ]
  return candidates.find((origin) => origin !== undefined && allowed.has(origin))
}

/** Posts `message` to the host, only to its allowed origin; false when there is no host to tell. */
export const notifyHost = (config: ConnectConfig, message: HostMessage): boolean => {
  const target = hostWindow()
  const origin = resolveHostOrigin(config)
  if (target === undefined || origin === undefined) return false
  target.postMessage(message, origin)
  return true
}
