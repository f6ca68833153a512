import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { ErrorBox, Field, KeyValues, OpenCell, TableHead, TaskProgress, useLoad, useTask } from "./common.tsx"
import { MetadataEditor } from "./MetadataEditor.tsx"
import { ProbeRuns } from "./ProbeRuns.tsx"
import { adminApi } from "./adminApi.ts"

const ConnectionDetail = (props: { readonly id: string; readonly onChanged: () => void }) => {
  const connection = useLoad(() => adminApi.getConnection(props.id), [props.id])
  const [target, setTarget] = useState("")
  const task = useTask()
  const [error, setError] = useState<string | undefined>()
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
    try {
      const done = await task.run("Migration", async () => {
        const started = await adminApi.migrateVersion(props.id, Number(target))
        return { taskId: started.task_id }
      })
      if (done.state === "failed") setError(`The migration failed${done.error === undefined ? "" : `: ${done.error}`}.`)
      changed()
    } catch (e) {
      setError(describeError(e))
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
          <ProbeRuns
            key={`${c.connectorId}-${c.connectorVersion}`}
            connectionId={c.id}
            connectorId={c.connectorId}
            version={c.connectorVersion}
          />
          <h3>Migrate to another version</h3>
          <form class="svc-row" onSubmit={migrate}>
            <Field id="migrate-target" label="Target version" value={target} onInput={setTarget} numeric />
            <button type="submit" class="svc-button svc-primary" disabled={task.running}>
              Migrate
            </button>
          </form>
          <ErrorBox error={error} />
          <TaskProgress label="Migration" task={task.current?.task} />
        </>
      )}
    </section>
  )
}

/** The connection screen: filters, list, one connection's details. */
export const ConnectionsView = () => {
  const [labelSelector, setLabelSelector] = useState("")
  const [applied, setApplied] = useState("")
  const connections = useLoad(() => adminApi.listConnections({ labelSelector: applied, limit: "100" }), [applied])
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
      <div class="svc-card svc-table-scroll">
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
