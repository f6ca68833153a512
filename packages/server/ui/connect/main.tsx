/**
 * The Connect UI (docs/ui.md): an end user's connectors, connections and notices, and the setup of
 * a new connection (forms rendered from each step's JSON Schema, the OAuth2 sign-in in a popup, the
 * verify step), talking to the public service with the browser session; `/connect/error` is the
 * in-frame page of a refused login.
 */
import type { Connection } from "@svc/domain/Connection"
import type { SetupProgress } from "@svc/domain/ConnectionSetup"
import type { Connector } from "@svc/domain/Connector"
import type { Notification } from "@svc/domain/Notification"
import type { Task } from "@svc/domain/Task"
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, type Page, readCookie } from "../shared/api.ts"
import { Alert, ConfirmDialog, displayNameOf } from "../shared/components.tsx"
import "../shared/theme.css"
import { applyTheme } from "../shared/theme.ts"
import { api, messageOf, returnPath, type Session } from "./common.ts"
import { ErrorPage } from "./ErrorPage.tsx"
import { type ConnectConfig, hostWindow, notifyHost } from "./host.ts"
import { ConnectionList, ConnectorList, faceOf, NoticeList, parseAction } from "./Lists.tsx"
import { OAuthReturn, SetupFlow } from "./SetupFlow.tsx"

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

  const nameOf = (connection: Connection) => displayNameOf(faceOf(connectors, connection))
  const returnToUrl = `${location.origin}${returnPath}`

  const start = async (key: string, title: string, load: () => Promise<SetupProgress>, noticeId?: string) => {
    setBusy(key)
    setError(undefined)
    setFlash(undefined)
    try {
      const progress = await load()
      setFlow({ title, progress, ...(noticeId === undefined ? {} : { noticeId }) })
    } catch (e) {
      fail(e)
    } finally {
      setBusy(undefined)
    }
  }

  const connect = (connector: Connector) =>
    start(connector.id, `Connect ${displayNameOf(connector)}`, () =>
      api.send<SetupProgress>("POST", "/api/v1/connections/_initiate", { connectorId: connector.id, returnToUrl })
    )

  const act = (notice: Notification) => {
    const action = parseAction(notice.action_url)
    if (action === undefined) return
    return start(
      notice.id,
      notice.title,
      () =>
        action.action === "reauth"
          ? api.send<SetupProgress>("POST", `/api/v1/connections/${action.connectionId}/_reauthorize`, { returnToUrl })
          : api.get<SetupProgress>(`/api/v1/connections/${action.connectionId}/_setup`),
      notice.id
    )
  }

  const resume = (connection: Connection) =>
    start(connection.id, `Finish connecting ${nameOf(connection)}`, () =>
      api.get<SetupProgress>(`/api/v1/connections/${connection.id}/_setup`)
    )

  const done = async (connection: Connection) => {
    const current = flow
    setFlow(undefined)
    setFlash(`${nameOf(connection)} is connected.`)
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
      if (task.state === "failed") setError(`Disconnecting ${nameOf(connection)} failed.`)
      else {
        setFlash(`${nameOf(connection)} is disconnected.`)
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
  const confirmName = confirm === undefined ? "" : nameOf(confirm)

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
      <Alert kind="error" text={error} testId="error" />
      <Alert kind="success" text={flash} testId="flash" />
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
      {loaded && activeNotices.length > 0 && <NoticeList notices={activeNotices} busy={busy} onAct={act} />}
      {loaded && (
        <ConnectionList
          connections={connections}
          connectors={connectors}
          busy={busy}
          onResume={resume}
          onDisconnect={setConfirm}
        />
      )}
      {loaded && (
        <ConnectorList
          connectors={usable}
          disabled={(connector) => busy === connector.id || flow !== undefined}
          onConnect={connect}
        />
      )}
      <p class="svc-muted">Signed in as {props.session.externalId}.</p>
      <ConfirmDialog
        open={confirm !== undefined}
        title={
          confirm?.state === "setup" ? `Remove the unfinished ${confirmName} setup?` : `Disconnect ${confirmName}?`
        }
        impact={
          <p>
            {confirm?.state === "setup"
              ? "The setup is discarded with what was entered so far."
              : "The application will no longer be able to use this account. Access granted at the provider is revoked."}
          </p>
        }
        confirmLabel={confirm?.state === "setup" ? "Remove" : "Disconnect"}
        onConfirm={() => confirm !== undefined && disconnect(confirm)}
        onClose={() => setConfirm(undefined)}
      />
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
  "/connect/error": ErrorPage
}
const Screen = pages[location.pathname] ?? App
const root = document.getElementById("app")
if (root !== null) render(<Screen />, root)
