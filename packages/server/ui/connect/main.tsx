/**
 * The Connect UI (docs/ui.md): an end user's connectors, connections and notices, and the setup of
 * a new connection (forms rendered from each step's JSON Schema, the OAuth2 sign-in in a popup, the
 * verify step), talking to the public service with the browser session.
 */
import type { Connection } from "@svc/domain/Connection"
import type { SetupProgress } from "@svc/domain/ConnectionSetup"
import type { Connector } from "@svc/domain/Connector"
import type { Notification } from "@svc/domain/Notification"
import type { Task } from "@svc/domain/Task"
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, type Page, readCookie } from "../shared/api.ts"
import "../shared/theme.css"
import { ConfirmDisconnect } from "./ConfirmDisconnect.tsx"
import { api, messageOf, returnPath, type Session } from "./common.ts"
import { applyTheme, type ConnectConfig, hostWindow, notifyHost } from "./host.ts"
import { OAuthReturn, SetupFlow } from "./SetupFlow.tsx"

const stateBadge = (connection: Connection) => {
  const good = connection.state === "configured"
  return (
    <span class={`svc-badge ${good ? "svc-badge-good" : "svc-badge-warn"}`} data-testid="connection-state">
      {connection.state}
    </span>
  )
}

const healthBadge = (connection: Connection) => (
  <span
    class={`svc-badge ${connection.healthState === "healthy" ? "svc-badge-good" : "svc-badge-bad"}`}
    data-testid="connection-health"
  >
    {connection.healthState}
  </span>
)

/** `/connections/{id}?action=reauth|configure` from a notice's `action_url`. */
const parseAction = (url: string | null): { connectionId: string; action: "reauth" | "configure" } | undefined => {
  if (url === null) return undefined
  const match = /^\/connections\/([A-Za-z0-9_-]+)\?action=(reauth|configure)$/.exec(url)
  return match === null ? undefined : { connectionId: match[1]!, action: match[2] as "reauth" | "configure" }
}

type Flow = { readonly title: string; readonly progress: SetupProgress; readonly noticeId?: string }

const Home = (props: {
  readonly config: ConnectConfig
  readonly session: Session
  readonly onSignedOut: () => void
}) => {
  const [connectors, setConnectors] = useState<ReadonlyArray<Connector>>([])
  const [connections, setConnections] = useState<ReadonlyArray<Connection>>([])
  const [notices, setNotices] = useState<ReadonlyArray<Notification>>([])
  const [loaded, setLoaded] = useState(false)
  const [error, setError] = useState<string | undefined>()
  const [flash, setFlash] = useState<string | undefined>()
  const [flow, setFlow] = useState<Flow | undefined>()
  const [busy, setBusy] = useState<string | undefined>()
  const [confirm, setConfirm] = useState<Connection | undefined>()

  const fail = (e: unknown) => {
    if (e instanceof ApiError && e.status === 401) props.onSignedOut()
    else setError(messageOf(e))
  }

  /** Reloads the three lists; answers the notices read (empty when the reload failed). */
  const refresh = async (): Promise<ReadonlyArray<Notification>> => {
    try {
      const [cxrs, cxns, ntfs] = await Promise.all([
        api.get<Page<Connector>>("/api/v1/connectors", { limit: "100" }),
        api.get<Page<Connection>>("/api/v1/connections", { limit: "100" }),
        api.get<{ items: ReadonlyArray<Notification> }>("/api/v1/notifications")
      ])
      setConnectors(cxrs.items)
      setConnections(cxns.items)
      setNotices(ntfs.items)
      setLoaded(true)
      return ntfs.items
    } catch (e) {
      fail(e)
      return []
    }
  }

  useEffect(() => {
    refresh()
  }, [])

  const connectorName = (id: string) => connectors.find((c) => c.id === id)?.name ?? id
  const returnToUrl = `${location.origin}${returnPath}`

  const connect = async (connector: Connector) => {
    setBusy(connector.id)
    setError(undefined)
    setFlash(undefined)
    try {
      const progress = await api.send<SetupProgress>("POST", "/api/v1/connections/_initiate", {
        connectorId: connector.id,
        returnToUrl
      })
      setFlow({ title: `Connect ${connector.name}`, progress })
    } catch (e) {
      fail(e)
    } finally {
      setBusy(undefined)
    }
  }

  const act = async (notice: Notification) => {
    const action = parseAction(notice.action_url)
    if (action === undefined) return
    setBusy(notice.id)
    setError(undefined)
    try {
      const progress =
        action.action === "reauth"
          ? await api.send<SetupProgress>("POST", `/api/v1/connections/${action.connectionId}/_reauthorize`, {
              returnToUrl
            })
          : await api.get<SetupProgress>(`/api/v1/connections/${action.connectionId}/_setup`)
      setFlow({ title: notice.title, progress, noticeId: notice.id })
    } catch (e) {
      fail(e)
    } finally {
      setBusy(undefined)
    }
  }

  const done = async (connection: Connection) => {
    const current = flow
    setFlow(undefined)
    setFlash(`${connection.name} is connected.`)
    notifyHost(props.config, {
      type: "svc:connect:completed",
      connectionId: connection.id,
      connectorId: connection.connectorId,
      state: connection.state
    })
    const after = await refresh()
    // A completed action usually resolves its notice; one still listed is marked viewed.
    if (current?.noticeId !== undefined && after.some((n) => n.id === current.noticeId)) {
      await api.send("POST", `/api/v1/notifications/${current.noticeId}/_viewed`).catch(() => undefined)
      await refresh()
    }
  }

  const disconnect = async (connection: Connection) => {
    setConfirm(undefined)
    setBusy(connection.id)
    setError(undefined)
    try {
      const started = await api.send<{ taskId: string }>("POST", `/api/v1/connections/${connection.id}/_disconnect`, {})
      const deadline = Date.now() + 120_000
      let task = await api.get<Task>(`/api/v1/tasks/${encodeURIComponent(started.taskId)}`)
      while (task.state !== "completed" && task.state !== "failed" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500))
        task = await api.get<Task>(`/api/v1/tasks/${encodeURIComponent(started.taskId)}`)
      }
      if (task.state === "failed") setError(`Disconnecting ${connection.name} failed.`)
      else {
        setFlash(`${connection.name} is disconnected.`)
        notifyHost(props.config, { type: "svc:connect:disconnected", connectionId: connection.id })
      }
      await refresh()
    } catch (e) {
      fail(e)
    } finally {
      setBusy(undefined)
    }
  }

  const usable = connectors.filter((c) => c.state === "primary")
  const activeNotices = notices.filter((n) => !n.viewed || parseAction(n.action_url) !== undefined)

  return (
    <main>
      <div class="svc-row">
        <h1>Connected accounts</h1>
        <span class="svc-spacer" />
        {hostWindow() !== undefined && (
          <button
            type="button"
            class="svc-button"
            onClick={() => {
              notifyHost(props.config, { type: "svc:connect:close" })
              // A popup the host opened closes itself; an iframe is the host's to remove.
              if (window.parent === window && window.opener !== null) window.close()
            }}
          >
            Close
          </button>
        )}
      </div>
      {error !== undefined && (
        <p class="svc-error" role="alert" data-testid="error">
          {error}
        </p>
      )}
      {flash !== undefined && (
        <p class="svc-success" role="status" data-testid="flash">
          {flash}
        </p>
      )}
      {flow !== undefined && (
        <SetupFlow
          key={flow.progress.connection.id}
          title={flow.title}
          initial={flow.progress}
          onDone={done}
          onCancel={() => {
            setFlow(undefined)
            refresh()
          }}
        />
      )}
      {!loaded && error === undefined && <p role="status">Loading…</p>}
      {loaded && activeNotices.length > 0 && (
        <section class="svc-card" aria-labelledby="notices-heading">
          <h2 id="notices-heading">Notifications</h2>
          <ul class="svc-list" data-testid="notifications">
            {activeNotices.map((notice) => {
              const action = parseAction(notice.action_url)
              return (
                <li key={notice.id} class={`svc-notice-${notice.level}`}>
                  <div>
                    <div class="svc-name">{notice.title}</div>
                    <div class="svc-muted">{notice.message}</div>
                  </div>
                  <span class="svc-spacer" />
                  {notice.can_action && action !== undefined && (
                    <button
                      type="button"
                      class="svc-button svc-primary"
                      disabled={busy === notice.id}
                      onClick={() => act(notice)}
                    >
                      {action.action === "reauth" ? "Reconnect" : "Finish setup"}
                    </button>
                  )}
                </li>
              )
            })}
          </ul>
        </section>
      )}
      {loaded && (
        <section class="svc-card" aria-labelledby="connections-heading">
          <h2 id="connections-heading">Your connections</h2>
          {connections.length === 0 ? (
            <p class="svc-muted">No connections yet.</p>
          ) : (
            <ul class="svc-list" data-testid="connections">
              {connections.map((connection) => (
                <li key={connection.id} data-connection-id={connection.id}>
                  <div>
                    <div class="svc-name">{connectorName(connection.connectorId)}</div>
                    <div class="svc-muted svc-mono">{connection.name}</div>
                  </div>
                  {stateBadge(connection)}
                  {healthBadge(connection)}
                  <span class="svc-spacer" />
                  {connection.state === "setup" && (
                    <button
                      type="button"
                      class="svc-button"
                      onClick={async () => {
                        try {
                          const progress = await api.get<SetupProgress>(`/api/v1/connections/${connection.id}/_setup`)
                          setFlow({ title: `Finish setting up ${connection.name}`, progress })
                        } catch (e) {
                          fail(e)
                        }
                      }}
                    >
                      Resume setup
                    </button>
                  )}
                  <button
                    type="button"
                    class="svc-button svc-danger"
                    disabled={busy === connection.id || connection.state === "disconnecting"}
                    aria-label={`Disconnect ${connection.name}`}
                    onClick={() => setConfirm(connection)}
                  >
                    {busy === connection.id ? "Disconnecting…" : "Disconnect"}
                  </button>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
      {loaded && (
        <section class="svc-card" aria-labelledby="connectors-heading">
          <h2 id="connectors-heading">Connect an account</h2>
          {usable.length === 0 ? (
            <p class="svc-muted">There is nothing you can connect yet.</p>
          ) : (
            <ul class="svc-list" data-testid="connectors">
              {usable.map((connector) => (
                <li key={connector.id}>
                  <div>
                    <div class="svc-name">{connector.name}</div>
                    <div class="svc-muted">{connector.type}</div>
                  </div>
                  <span class="svc-spacer" />
                  <button
                    type="button"
                    class="svc-button svc-primary"
                    disabled={busy === connector.id || flow !== undefined}
                    aria-label={`Connect ${connector.name}`}
                    onClick={() => connect(connector)}
                  >
                    Connect
                  </button>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
      <p class="svc-muted">Signed in as {props.session.externalId}.</p>
      <ConfirmDisconnect connection={confirm} onConfirm={disconnect} onClose={() => setConfirm(undefined)} />
    </main>
  )
}

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
      api.get<ConnectConfig>("/connect/config.json"),
      // Without the XSRF cookie there is no session to ask about (and no 401 to log).
      readCookie("XSRF-TOKEN") === undefined
        ? Promise.resolve(null)
        : api.get<Session>("/marketplace/session").catch((e: unknown) => {
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
        <p class="svc-error" role="alert">
          {error}
        </p>
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
const root = document.getElementById("app")
if (root !== null) render(location.pathname === returnPath ? <OAuthReturn /> : <App />, root)
