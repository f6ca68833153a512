/**
 * The admin UI (docs/ui.md) on the admin-api: sign-in (a signed login URL, the host's
 * `admin_api.ui.initiate_session_url`, or a pasted admin token), then one screen per `#/…` route
 * (screens.ts).
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, describeError, getChecked, hasFields } from "../shared/api.ts"
import "../shared/theme.css"
import { applyTheme } from "../shared/theme.ts"
import { api, ErrorBox } from "./common.tsx"
import { type Screen, screenOf, screens } from "./screens.ts"

interface AdminSession {
  readonly actorId: string
  readonly externalId: string
  readonly name: string
  readonly expiresAt: string
  readonly initiateSessionUrl: string | null
}

const isAdminSession = hasFields<AdminSession>({
  actorId: "string",
  externalId: "string",
  name: "string",
  expiresAt: "string",
  initiateSessionUrl: "string?"
})

const loginErrors: Readonly<Record<string, string>> = {
  invalid_token: "The sign-in link was not accepted.",
  token_expired: "The sign-in link has expired.",
  nonce_replayed: "The sign-in link was already used.",
  login_token_too_long: "The sign-in link lives longer than 15 minutes.",
  login_token_without_nonce: "The sign-in link has no single-use nonce."
}

const SignIn = (props: { readonly onSignedIn: () => void }) => {
  const [token, setToken] = useState("")
  const [error, setError] = useState<string | undefined>(() => {
    const code = new URLSearchParams(location.search).get("login_error")
    return code === null ? undefined : (loginErrors[code] ?? `Sign-in failed (${code}).`)
  })
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    if (token.trim() === "") {
      setError("Paste an admin token (for the embedded default: the content of .svc/admin.token).")
      return
    }
    setBusy(true)
    setError(undefined)
    try {
      await api.send("POST", "/ui/session", { token: token.trim() })
      setToken("")
      history.replaceState(null, "", "/ui/")
      props.onSignedIn()
    } catch (e) {
      setError(describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main>
      <form class="svc-card svc-form" onSubmit={submit} noValidate aria-label="Sign in">
        <h1>svc admin: sign in</h1>
        <p class="svc-muted">
          Open a signed admin login link, or paste an admin token. The token is exchanged for a session cookie and is
          not kept by this page.
        </p>
        <ErrorBox error={error} />
        <div class="svc-field">
          <label for="admin-token">Admin token</label>
          <input
            id="admin-token"
            type="password"
            autocomplete="off"
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
        </div>
        <button type="submit" class="svc-button svc-primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  )
}

const Shell = (props: { readonly session: AdminSession; readonly onSignedOut: () => void }) => {
  const [screen, setScreen] = useState<Screen>(() => screenOf(location.hash))
  const [error, setError] = useState<string | undefined>()
  useEffect(() => {
    const onHash = () => setScreen(screenOf(location.hash))
    window.addEventListener("hashchange", onHash)
    return () => window.removeEventListener("hashchange", onHash)
  }, [])
  useEffect(() => {
    document.title = `${screens[screen].title} · svc admin`
  }, [screen])
  const signOut = async () => {
    try {
      await api.send("POST", "/ui/logout")
      props.onSignedOut()
    } catch (e) {
      setError(describeError(e))
    }
  }
  const View = screens[screen].view
  return (
    <main>
      <div class="svc-row">
        <strong>svc admin</strong>
        <span class="svc-spacer" />
        <span class="svc-muted">Signed in as {props.session.externalId}</span>
        <button type="button" class="svc-button" onClick={signOut}>
          Sign out
        </button>
      </div>
      <nav class="svc-nav" aria-label="Sections">
        {(Object.keys(screens) as Array<Screen>).map((key) => (
          <a key={key} href={`#/${key}`} aria-current={key === screen ? "page" : undefined}>
            {screens[key].title}
          </a>
        ))}
      </nav>
      <ErrorBox error={error} />
      <View />
    </main>
  )
}

const App = () => {
  const [session, setSession] = useState<AdminSession | null | undefined>()
  const [error, setError] = useState<string | undefined>()
  const load = () =>
    getChecked(api, "/ui/session", isAdminSession)
      .then(setSession)
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 401) setSession(null)
        else setError(describeError(e))
      })
  useEffect(() => {
    load()
  }, [])
  if (error !== undefined)
    return (
      <main>
        <ErrorBox error={error} />
      </main>
    )
  if (session === undefined)
    return (
      <main>
        <p role="status">Loading…</p>
      </main>
    )
  if (session === null) return <SignIn onSignedIn={load} />
  return <Shell session={session} onSignedOut={() => setSession(null)} />
}

applyTheme(location.search)
const root = document.getElementById("app")
if (root !== null) render(<App />, root)
