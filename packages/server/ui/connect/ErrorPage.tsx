/**
 * The Connect UI's in-frame error page (`/connect/error?code=…`, docs/ui.md): where a refused
 * marketplace login bound for the Connect UI lands. It says what happened and what the host
 * application must do, and posts `svc:connect:error` with the code to the host: to an allowed
 * origin, or for `origin_not_allowed` (and `origin_unknown`, when the browser can name the
 * framing page after all) to the framing page's own origin (the message carries nothing but the
 * code and the sentences below).
 */
import { useEffect, useState } from "preact/hooks"
import { getChecked } from "../shared/api.ts"
import { api } from "./common.ts"
import { hostWindow, isConnectConfig, notifyHost } from "./host.ts"

/** What the user reads, and what the host's developers must do, for each code. */
export const connectErrors: Readonly<
  Record<string, { readonly title: string; readonly user: string; readonly host: string }>
> = {
  unknown_actor: {
    title: "Your account is not set up yet",
    user: "This application has not finished setting up your account for connections. Try again later or contact its support.",
    host: "The login token names an actor svc does not know: create it (POST /api/v1/actors) before signing its login URL."
  },
  link_expired: {
    title: "This link has expired",
    user: "Reload the application's page to get a fresh one.",
    host: "The login URL expired: sign a fresh one for every page view (at most 15 minutes of life)."
  },
  link_invalid: {
    title: "This link cannot be used",
    user: "It was already used or is not valid. Reload the application's page to get a fresh one.",
    host: "The login URL was refused (already used, wrong signature or audience, no nonce): sign a fresh single-use one for every page view."
  },
  origin_unknown: {
    title: "This application may not show this page",
    user: "The application embedding this page could not be identified. Contact its support.",
    host: "The framing page sent no Referer and this browser does not report the frame's ancestor: name the host's origin in return_to (host_origin=…), or let the iframe send a Referer."
  },
  origin_not_allowed: {
    title: "This application may not show this page",
    user: "The application embedding this page is not allowed to. Contact its support.",
    host: "The embedding page's origin is not in host_application.allowed_origins: add it to svc's configuration."
  }
}

const fallback = {
  title: "Something went wrong",
  user: "This page could not be opened. Reload the application's page to try again.",
  host: "The marketplace login was refused; svc's INFO log names the reason."
}

/** The origin of the page framing this one (or opening it), as the browser reports it. */
const framingOrigin = (): string | undefined => {
  const ancestor = window.parent !== window ? location.ancestorOrigins?.[0] : undefined
  if (ancestor !== undefined) return ancestor
  const named = new URLSearchParams(location.search).get("host_origin")
  if (named === null || !URL.canParse(named)) return undefined
  return new URL(named).origin
}

export const ErrorPage = () => {
  const code = new URLSearchParams(location.search).get("code") ?? "unknown"
  const known = connectErrors[code]
  const text = known ?? fallback
  const [told, setTold] = useState(false)

  useEffect(() => {
    const message = {
      type: "svc:connect:error",
      code: known === undefined ? "unknown" : code,
      message: text.host
    } as const
    if (code === "origin_not_allowed" || code === "origin_unknown") {
      const target = hostWindow()
      const origin = framingOrigin()
      if (target !== undefined && origin !== undefined) {
        target.postMessage(message, origin)
        setTold(true)
      }
      return
    }
    getChecked(api, "/connect/config.json", isConnectConfig)
      .then((config) => setTold(notifyHost(config, message)))
      .catch(() => undefined)
  }, [])

  return (
    <main>
      <section class="svc-card" aria-labelledby="error-title" data-code={code}>
        <h1 id="error-title">{text.title}</h1>
        <p>{text.user}</p>
        <details class="svc-details">
          <summary>For the application's developers</summary>
          <p>{text.host}</p>
          <p class="svc-mono">code: {code}</p>
        </details>
        {told && (
          <p class="svc-muted" role="status">
            The application was told.
          </p>
        )}
      </section>
    </main>
  )
}
