import type { Connector, ConnectorVersion } from "@svc/domain/Connector"
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { ConfirmDialog, ConnectorIdentity, plural } from "../shared/components.tsx"
import { ErrorBox, TableHead, TaskProgress, useLoad, useTask } from "./common.tsx"
import { ConnectorEditor } from "./ConnectorEditor.tsx"
import { canonicalText } from "./diff.ts"
import { PublishDialog } from "./PublishDialog.tsx"
import { adminApi } from "./adminApi.ts"

/** How many live connections use `connectorId` (every page read). */
const countConnections = async (connectorId: string): Promise<number> => {
  let count = 0
  let cursor: string | undefined
  do {
    const page = await adminApi.listConnections({ connectorId, limit: "100", cursor })
    count += page.items.filter((c) => c.state !== "disconnected").length
    cursor = page.cursor
  } while (cursor !== undefined)
  return count
}

type Lifecycle = "_disconnectAll" | "_archive"

const lifecycleText: Readonly<Record<Lifecycle, { label: string; title: string; effect: string }>> = {
  _disconnectAll: {
    label: "Disconnect all",
    title: "Disconnect every connection of",
    effect: "Their credentials are erased and OAuth2 tokens revoked. The connector stays usable."
  },
  _archive: {
    label: "Archive connector",
    title: "Archive",
    effect: "Every version is archived: nobody can connect it again."
  }
}

export const ConnectorDetail = (props: { readonly connector: Connector; readonly onChanged: () => void }) => {
  const id = props.connector.id
  const versions = useLoad(() => adminApi.listVersions(id), [id])
  const connections = useLoad(() => countConnections(id), [id])
  const task = useTask()
  const [error, setError] = useState<string | undefined>()
  const [confirm, setConfirm] = useState<Lifecycle | undefined>()
  const [publishing, setPublishing] = useState<ConnectorVersion | undefined>()
  const [editing, setEditing] = useState(false)
  const items = versions.data?.items ?? []
  const primary = items.find((v) => v.state === "primary")
  const latest = items.reduce<ConnectorVersion | undefined>(
    (a, v) => (a === undefined || v.version > a.version ? v : a),
    undefined
  )
  const changed = () => {
    versions.reload()
    connections.reload()
    props.onChanged()
  }

  const publish = async (version: number) => {
    setPublishing(undefined)
    setError(undefined)
    try {
      await adminApi.publish(id, version)
      changed()
    } catch (e) {
      setError(describeError(e))
    }
  }

  const lifecycle = async (operation: Lifecycle) => {
    setConfirm(undefined)
    setError(undefined)
    try {
      const done = await task.run(lifecycleText[operation].label, () =>
        operation === "_archive" ? adminApi.archive(id) : adminApi.disconnectAll(id)
      )
      if (done.state === "failed")
        setError(`${lifecycleText[operation].label} failed${done.error ? `: ${done.error}` : ""}.`)
      changed()
    } catch (e) {
      setError(describeError(e))
    }
  }

  const count = connections.data
  return (
    <section class="svc-card" aria-label={`Connector ${props.connector.name}`} data-testid="connector-detail">
      <div class="svc-row">
        <ConnectorIdentity connector={props.connector} compact>
          <span class="svc-mono svc-muted">
            {props.connector.name} · {id}
          </span>
        </ConnectorIdentity>
        <span class="svc-spacer" />
        <button type="button" class="svc-button" disabled={editing} onClick={() => setEditing(true)}>
          New version
        </button>
        <button type="button" class="svc-button" disabled={task.running} onClick={() => setConfirm("_disconnectAll")}>
          Disconnect all
        </button>
        <button
          type="button"
          class="svc-button svc-danger"
          disabled={task.running}
          onClick={() => setConfirm("_archive")}
        >
          Archive connector
        </button>
      </div>
      <ErrorBox error={error ?? versions.error ?? connections.error} />
      <TaskProgress label={task.current?.label ?? ""} task={task.current?.task} />
      {editing && (
        <ConnectorEditor
          connector={props.connector}
          initial={latest === undefined ? "" : canonicalText(latest.definition)}
          onCancel={() => setEditing(false)}
          onSaved={() => {
            setEditing(false)
            changed()
          }}
        />
      )}
      <div class="svc-table-scroll">
        <table>
          <TableHead columns={["Version", "State", "Type", "Created"]} />
          <tbody>
            {[...items].reverse().map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td>{v.version}</td>
                <td>
                  <span class="svc-badge">{v.state}</span>
                </td>
                <td>{v.definition.type}</td>
                <td>{new Date(v.createdAt).toLocaleString()}</td>
                <td>
                  {(v.state === "draft" || v.state === "active") && (
                    <button
                      type="button"
                      class="svc-button"
                      aria-label={`Publish version ${v.version}`}
                      onClick={() => setPublishing(v)}
                    >
                      Publish
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <PublishDialog
        target={publishing}
        primary={primary}
        connections={count}
        onConfirm={publish}
        onClose={() => setPublishing(undefined)}
      />
      <ConfirmDialog
        open={confirm !== undefined}
        title={confirm === undefined ? "" : `${lifecycleText[confirm].title} ${props.connector.name}?`}
        impact={
          <p>
            This disconnects {count === undefined ? "all its" : plural(count, "connection")}.{" "}
            {confirm === undefined ? "" : lifecycleText[confirm].effect}
          </p>
        }
        confirmLabel={confirm === undefined ? "" : lifecycleText[confirm].label}
        onConfirm={() => confirm !== undefined && lifecycle(confirm)}
        onClose={() => setConfirm(undefined)}
      />
    </section>
  )
}
