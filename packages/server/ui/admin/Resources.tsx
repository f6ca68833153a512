/**
 * Namespaces, connectors with their versions (publish, archive with the task's progress) and
 * connections (state, health, labels and annotations editable, version migration with the task's
 * progress).
 */
import type { Connection } from "@svc/domain/Connection"
import type { Connector, ConnectorVersion } from "@svc/domain/Connector"
import type { MigrationTaskHandle } from "@svc/domain/Migration"
import type { Namespace } from "@svc/domain/Namespace"
import type { Task } from "@svc/domain/Task"
import { useState } from "preact/hooks"
import { describeError, type Page } from "../shared/api.ts"
import { api, ErrorBox, Field, KeyValues, OpenCell, pollTask, TableHead, TaskProgress, useLoad } from "./common.tsx"

/** The namespace screen: the tree as a list, and a form to add one. */
export const NamespacesView = () => {
  const namespaces = useLoad(() => api.get<Page<Namespace>>("/api/v1/namespaces", { limit: "200" }), [])
  const [path, setPath] = useState("")
  const [error, setError] = useState<string | undefined>()
  const create = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    try {
      await api.send("POST", "/api/v1/namespaces", { path: path.trim() })
      setPath("")
      namespaces.reload()
    } catch (e) {
      setError(describeError(e))
    }
  }
  return (
    <section aria-label="Namespaces">
      <h1>Namespaces</h1>
      <form class="svc-card svc-row" onSubmit={create}>
        <Field id="ns-path" label="New namespace path" value={path} onInput={setPath} placeholder="root.acme" />
        <button type="submit" class="svc-button svc-primary">
          Create namespace
        </button>
      </form>
      <ErrorBox error={error ?? namespaces.error} />
      <div class="svc-card">
        <table>
          <thead>
            <tr>
              <th scope="col">Path</th>
              <th scope="col">Labels</th>
            </tr>
          </thead>
          <tbody>
            {(namespaces.data?.items ?? []).map((ns) => (
              <tr key={ns.path}>
                <td class="svc-mono">{ns.path}</td>
                <td>
                  <KeyValues values={ns.labels} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}

const ConnectorDetail = (props: { readonly connector: Connector; readonly onChanged: () => void }) => {
  const id = props.connector.id
  const versions = useLoad(
    () => api.get<Page<ConnectorVersion>>(`/api/v1/connectors/${id}/versions`, { limit: "100" }),
    [id]
  )
  const [error, setError] = useState<string | undefined>()
  const [task, setTask] = useState<{ label: string; task: Task } | undefined>()
  const [busy, setBusy] = useState(false)

  const publish = async (version: number) => {
    setError(undefined)
    try {
      await api.send("PUT", `/api/v1/connectors/${id}/versions/${version}/_state`, { state: "primary" })
      versions.reload()
      props.onChanged()
    } catch (e) {
      setError(describeError(e))
    }
  }

  const lifecycle = async (operation: "_archive" | "_disconnectAll", label: string) => {
    setError(undefined)
    setBusy(true)
    try {
      const started = await api.send<{ taskId: string }>("POST", `/api/v1/connectors/${id}/${operation}`, {})
      await pollTask(started.taskId, (t) => setTask({ label, task: t }))
      versions.reload()
      props.onChanged()
    } catch (e) {
      setError(describeError(e))
    } finally {
      setBusy(false)
    }
  }

  return (
    <section class="svc-card" aria-label={`Connector ${props.connector.name}`} data-testid="connector-detail">
      <div class="svc-row">
        <h2>{props.connector.name}</h2>
        <span class="svc-mono svc-muted">{id}</span>
        <span class="svc-spacer" />
        <button
          type="button"
          class="svc-button"
          disabled={busy}
          onClick={() => lifecycle("_disconnectAll", "Disconnect all")}
        >
          Disconnect all
        </button>
        <button
          type="button"
          class="svc-button svc-danger"
          disabled={busy}
          onClick={() => lifecycle("_archive", "Archive")}
        >
          Archive connector
        </button>
      </div>
      <ErrorBox error={error ?? versions.error} />
      <TaskProgress label={task?.label ?? ""} task={task?.task} />
      <table>
        <TableHead columns={["Version", "State", "Type", "Created"]} />
        <tbody>
          {(versions.data?.items ?? []).map((v) => (
            <tr key={v.version}>
              <td>{v.version}</td>
              <td>
                <span class="svc-badge">{v.state}</span>
              </td>
              <td>{(v.definition as { type?: string }).type}</td>
              <td>{new Date(v.createdAt).toLocaleString()}</td>
              <td>
                {(v.state === "draft" || v.state === "active") && (
                  <button
                    type="button"
                    class="svc-button"
                    aria-label={`Publish version ${v.version}`}
                    onClick={() => publish(v.version)}
                  >
                    Publish
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}

/** The connector screen: list, then one connector's versions and lifecycle. */
export const ConnectorsView = () => {
  const connectors = useLoad(() => api.get<Page<Connector>>("/api/v1/connectors", { limit: "100" }), [])
  const [selected, setSelected] = useState<string | undefined>()
  const connector = connectors.data?.items.find((c) => c.id === selected)
  return (
    <section aria-label="Connectors">
      <h1>Connectors</h1>
      <ErrorBox error={connectors.error} />
      {connector !== undefined && <ConnectorDetail connector={connector} onChanged={connectors.reload} />}
      <div class="svc-card">
        <table data-testid="connectors">
          <TableHead columns={["Name", "Namespace", "Version", "State", "Type"]} />
          <tbody>
            {(connectors.data?.items ?? []).map((c) => (
              <tr key={c.id}>
                <td>{c.name}</td>
                <td class="svc-mono">{c.namespace}</td>
                <td>{c.version}</td>
                <td>
                  <span class="svc-badge">{c.state}</span>
                </td>
                <td>{c.type}</td>
                <OpenCell name={c.name} onOpen={() => setSelected(c.id)} />
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}

/** Editable key/value metadata (labels or annotations) of one connection. */
const MetadataEditor = (props: {
  readonly connectionId: string
  readonly kind: "labels" | "annotations"
  readonly values: Readonly<Record<string, string>>
  readonly onChanged: () => void
}) => {
  const [key, setKey] = useState("")
  const [value, setValue] = useState("")
  const [error, setError] = useState<string | undefined>()
  const base = `/api/v1/connections/${props.connectionId}/${props.kind}`
  const run = async (call: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await call()
      props.onChanged()
    } catch (e) {
      setError(describeError(e))
    }
  }
  const title = props.kind === "labels" ? "Labels" : "Annotations"
  return (
    <div>
      <h3>{title}</h3>
      <ul class="svc-list">
        {Object.entries(props.values)
          .filter(([k]) => !k.startsWith("svc/"))
          .map(([k, v]) => (
            <li key={k}>
              <span class="svc-mono">
                {k}={v}
              </span>
              <span class="svc-spacer" />
              <button
                type="button"
                class="svc-button"
                aria-label={`Remove ${props.kind === "labels" ? "label" : "annotation"} ${k}`}
                onClick={() => run(() => api.send("DELETE", `${base}/${encodeURIComponent(k)}`))}
              >
                Remove
              </button>
            </li>
          ))}
      </ul>
      {Object.keys(props.values).some((k) => k.startsWith("svc/")) && (
        <details>
          <summary>System labels (read-only)</summary>
          <pre>
            {Object.entries(props.values)
              .filter(([k]) => k.startsWith("svc/"))
              .map(([k, v]) => `${k}=${v}`)
              .join("\n")}
          </pre>
        </details>
      )}
      <form
        class="svc-row"
        onSubmit={(e) => {
          e.preventDefault()
          run(async () => {
            await api.send("PUT", `${base}/${encodeURIComponent(key.trim())}`, { value })
            setKey("")
            setValue("")
          })
        }}
      >
        <Field id={`${props.kind}-key`} label={`${title} key`} value={key} onInput={setKey} />
        <Field id={`${props.kind}-value`} label={`${title} value`} value={value} onInput={setValue} />
        <button type="submit" class="svc-button">
          Set
        </button>
      </form>
      <ErrorBox error={error} />
    </div>
  )
}

const ConnectionDetail = (props: { readonly id: string; readonly onChanged: () => void }) => {
  const connection = useLoad(() => api.get<Connection>(`/api/v1/connections/${props.id}`), [props.id])
  const [target, setTarget] = useState("")
  const [task, setTask] = useState<Task | undefined>()
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const c = connection.data
  const changed = () => {
    connection.reload()
    props.onChanged()
  }
  const migrate = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    if (!/^[1-9]\d*$/.test(target.trim())) {
      setError("The target version is a whole number.")
      return
    }
    setBusy(true)
    try {
      const started = await api.send<MigrationTaskHandle>("POST", `/api/v1/connections/${props.id}/_migrate_version`, {
        target_version: Number(target),
        timeout_seconds: 300
      })
      const done = await pollTask(started.task_id, setTask)
      if (done.state === "failed") setError(`The migration failed${done.error === undefined ? "" : `: ${done.error}`}.`)
      changed()
    } catch (e) {
      setError(describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <section class="svc-card" aria-label={`Connection ${props.id}`} data-testid="connection-detail">
      <ErrorBox error={connection.error} />
      {c !== undefined && (
        <>
          <div class="svc-row">
            <h2>{c.name}</h2>
            <span class="svc-badge">{c.state}</span>
            <span class={`svc-badge ${c.healthState === "healthy" ? "svc-badge-good" : "svc-badge-bad"}`}>
              {c.healthState}
            </span>
            <span class="svc-muted">
              {c.connectorId} v{c.connectorVersion}
            </span>
          </div>
          <MetadataEditor connectionId={c.id} kind="labels" values={c.labels} onChanged={changed} />
          <MetadataEditor connectionId={c.id} kind="annotations" values={c.annotations} onChanged={changed} />
          <h3>Migrate to another version</h3>
          <form class="svc-row" onSubmit={migrate}>
            <Field id="migrate-target" label="Target version" value={target} onInput={setTarget} numeric />
            <button type="submit" class="svc-button svc-primary" disabled={busy}>
              Migrate
            </button>
          </form>
          <ErrorBox error={error} />
          <TaskProgress label="Migration" task={task} />
        </>
      )}
    </section>
  )
}

/** The connection screen: filters, list, one connection's details. */
export const ConnectionsView = () => {
  const [labelSelector, setLabelSelector] = useState("")
  const [applied, setApplied] = useState("")
  const connections = useLoad(
    () => api.get<Page<Connection>>("/api/v1/connections", { labelSelector: applied, limit: "100" }),
    [applied]
  )
  const [selected, setSelected] = useState<string | undefined>()
  return (
    <section aria-label="Connections">
      <h1>Connections</h1>
      <form
        class="svc-card svc-row"
        onSubmit={(e) => {
          e.preventDefault()
          setApplied(labelSelector)
        }}
      >
        <Field id="cxn-selector" label="Label selector" value={labelSelector} onInput={setLabelSelector} />
        <button type="submit" class="svc-button">
          Filter
        </button>
      </form>
      <ErrorBox error={connections.error} />
      {selected !== undefined && <ConnectionDetail key={selected} id={selected} onChanged={connections.reload} />}
      <div class="svc-card">
        <table data-testid="connections">
          <TableHead columns={["Name", "Namespace", "State", "Health", "Labels"]} />
          <tbody>
            {(connections.data?.items ?? []).map((c) => (
              <tr key={c.id}>
                <td>{c.name}</td>
                <td class="svc-mono">{c.namespace}</td>
                <td>{c.state}</td>
                <td>{c.healthState}</td>
                <td>
                  <KeyValues values={c.labels} />
                </td>
                <OpenCell name={c.name} onOpen={() => setSelected(c.id)} />
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
