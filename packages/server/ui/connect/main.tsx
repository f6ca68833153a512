/**
 * The Connect UI (docs/ui.md): an end user's connectors, connections and notices, and the setup of
 * a new connection (forms rendered from each step's JSON Schema, the OAuth2 sign-in in a popup, the
 * verify step), talking to the public service with the browser session; `/connect/error` is the
 * in-frame page of a refused login, and a framed `/marketplace/login` without a Referer is first
 * the frame check (FrameCheck.tsx).
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, getChecked, readCookie } from "../shared/api.ts"
import { Alert } from "../shared/components.tsx"
import "../shared/theme.css"
import { applyTheme } from "../shared/theme.ts"
import { api, isSession, messageOf, returnPath, type Session } from "./common.ts"
import { ErrorPage } from "./ErrorPage.tsx"
import { FrameCheck } from "./FrameCheck.tsx"
import { Home } from "./Home.tsx"
import { type ConnectConfig, isConnectConfig } from "./host.ts"
import { OAuthReturn } from "./OAuthReturn.tsx"

const SignedOut = () => {
  const loginUrl = `/marketplace/login?return_to=${encodeURIComponent(location.pathname + location.search)}`
  return (
    <main>
      <div class="svc-card">
        <h1>Sign-in required</h1>
        <p>Your session has ended or was never started. Open this page again from the application.</p>
        <a href={loginUrl}>Sign in</a>
      </div>
    </main>
  )
}

const App = () => {
  const [config, setConfig] = useState<ConnectConfig | undefined>()
  const [session, setSession] = useState<Session | null | undefined>()
  const [error, setError] = useState<string | undefined>()

  useEffect(() => {
    Promise.all([
      getChecked(api, "/connect/config.json", isConnectConfig),
      // Without the XSRF cookie there is no session to ask about (and no 401 to log).
      readCookie("XSRF-TOKEN") === undefined
        ? Promise.resolve(null)
        : getChecked(api, "/marketplace/session", isSession).catch((e: unknown) => {
            if (e instanceof ApiError && e.status === 401) return null
            throw e
          })
    ])
      .then(([c, s]) => {
        setConfig(c)
        setSession(s)
      })
      .catch((e: unknown) => setError(messageOf(e)))
  }, [])

  if (error !== undefined) {
    return (
      <main>
        <Alert kind="error" text={error} />
      </main>
    )
  }
  if (config === undefined || session === undefined) {
    return (
      <main>
        <p role="status">Loading…</p>
      </main>
    )
  }
  if (session === null) return <SignedOut />
  return <Home config={config} session={session} onSignedOut={() => setSession(null)} />
}

applyTheme(location.search)
const pages: Readonly<Record<string, () => preact.JSX.Element>> = {
  [returnPath]: OAuthReturn,
  "/connect/error": ErrorPage,
  // A framed login without a Referer: the frame's ancestor is asked for first (FrameCheck.tsx).
  "/marketplace/login": FrameCheck
}
const Screen = pages[location.pathname] ?? App
const root = document.getElementById("app")
if (root !== null) render(<Screen />, root)
