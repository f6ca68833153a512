/**
 * Who may use a loopback listener of the CLI (SECURITY.md "Local listeners are reachable from web
 * pages"): `signing-proxy` and `proxy` act with a credential, so a web page must not reach them
 * through DNS rebinding (a foreign `Host`) or a cross-site request (`Origin`, `Sec-Fetch-Site`).
 * Pure.
 */
import type { IncomingHttpHeaders } from "node:http"

/** Why a request to the listener on `port` is refused: the code and a one-line reason. */
export interface LocalRefusal {
  readonly code: "foreign_host" | "cross_site_request"
  readonly error: string
}

/** The `host:port` names of a loopback listener on `port` (lower case). */
export const loopbackHosts = (port: number): ReadonlySet<string> =>
  new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`])

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.length === 1 ? value[0] : value === undefined ? undefined : ""

/**
 * Why the request with `headers` and request target `target` may not use the listener on
 * `port`, or `undefined` when it may. An origin-form target (`/path`) must name the listener in
 * `Host` (a rebinding page names its own host); an absolute-form target (`http://host/path`, a
 * forward-proxy request, which browsers never send on a page's behalf) is checked by the proxy
 * itself. Any request with an `Origin` other than the listener's own, or with `Sec-Fetch-Site`
 * `cross-site` or `same-site`, came from another site's page.
 */
export const localRequestRefusal = (
  headers: IncomingHttpHeaders,
  target: string,
  port: number
): LocalRefusal | undefined => {
  const own = loopbackHosts(port)
  if (target.startsWith("/") || target === "*") {
    const host = single(headers.host)?.trim().toLowerCase()
    if (host === undefined || !own.has(host)) {
      return {
        code: "foreign_host",
        error: `this local proxy answers only requests addressed to 127.0.0.1:${port}, localhost:${port} or [::1]:${port} (DNS rebinding protection)`
      }
    }
  }
  const origin = single(headers.origin)
  if (origin !== undefined) {
    const parsed = URL.canParse(origin) ? new URL(origin) : undefined
    if (parsed === undefined || parsed.protocol !== "http:" || !own.has(parsed.host.toLowerCase())) {
      return {
        code: "cross_site_request",
        error: "this local proxy refuses requests from web pages of other origins (Origin is not the proxy's own)"
      }
    }
  }
  const site = single(headers["sec-fetch-site"])?.trim().toLowerCase()
  if (site === "cross-site" || site === "same-site") {
    return {
      code: "cross_site_request",
      error: `this local proxy refuses requests from web pages of other sites (Sec-Fetch-Site: ${site})`
    }
  }
  return undefined
}
