/**
 * The Connect UI's signed-in screen: the user's notices, connections and connectors (Lists.tsx),
 * the setup in progress (SetupFlow.tsx), disconnecting after a confirmation, and the messages to
 * the host (host.ts).
 */
import type { Connection } from "@svc/domain/Connection"
import type { SetupProgress } from "@svc/domain/ConnectionSetup"
import type { Connector } from "@svc/domain/Connector"
import type { Notification } from "@svc/domain/Notification"
import { useEffect, useState } from "preact/hooks"
import { ApiError } from "../shared/api.ts"
import { Alert, displayNameOf } from "../shared/components.tsx"
import { connectApi } from "./connectApi.ts"
import { messageOf, returnPath, type Session } from "./common.ts"
import { type ConnectConfig, notifyHost } from "./host.ts"
import { ConnectionList, ConnectorList, faceOf, NoticeList, parseAction } from "./Lists.tsx"
import { DisconnectDialog, HomeHeader } from "./HomeParts.tsx"
import { SetupFlow } from "./SetupFlow.tsx"

type Flow = { readonly title: string; readonly progress: SetupProgress; readonly noticeId?: string }

/** The signed-in screen: notices, connections, connectors, and the setup flow in progress. */
export const Home = (props: {
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
        connectApi.listConnectors(),
        connectApi.listConnections(),
        connectApi.listNotifications()
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
    start(connector.id, `Connect ${displayNameOf(connector)}`, () => connectApi.initiate(connector.id, returnToUrl))

  const act = (notice: Notification) => {
    const action = parseAction(notice.action_url)
    if (action === undefined) return
    return start(
      notice.id,
      notice.title,
      () =>
        action.action === "reauth"
          ? connectApi.reauthorize(action.connectionId, returnToUrl)
          : connectApi.setupProgress(action.connectionId),
      notice.id
    )
  }

  const resume = (connection: Connection) =>
    start(connection.id, `Finish connecting ${nameOf(connection)}`, () => connectApi.setupProgress(connection.id))

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
      await connectApi.markViewed(current.noticeId).catch(() => undefined)
      await refresh()
    }
  }

  const disconnect = async (connection: Connection) => {
    setConfirm(undefined)
    setBusy(connection.id)
    setError(undefined)
    try {
      const started = await connectApi.disconnect(connection.id)
      const deadline = Date.now() + 120_000
      let task = await connectApi.getTask(started.taskId)
      while (task.state !== "completed" && task.state !== "failed" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500))
        task = await connectApi.getTask(started.taskId)
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
      <HomeHeader config={props.config} />
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
      <DisconnectDialog
        connection={confirm}
        name={confirmName}
        onConfirm={() => confirm !== undefined && disconnect(confirm)}
        onClose={() => setConfirm(undefined)}
      />
    </main>
  )
}
