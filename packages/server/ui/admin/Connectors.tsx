import { useState } from "preact/hooks"
import { ConnectorIdentity } from "../shared/components.tsx"
import { ErrorBox, OpenCell, TableHead, useLoad } from "./common.tsx"
import { ConnectorDetail } from "./ConnectorDetail.tsx"
import { ConnectorEditor } from "./ConnectorEditor.tsx"
import { adminApi } from "./adminApi.ts"

const starter = `# A connector definition (docs/connector-definitions.md), YAML or JSON.
type: example
display_name: Example
auth:
  type: api_key
  placement: bearer
proxy:
  allowed_hosts: [api.example.com]
`

export const ConnectorsView = () => {
  const connectors = useLoad(() => adminApi.listConnectors({ limit: "100" }), [])
  const [selected, setSelected] = useState<string | undefined>()
  const [creating, setCreating] = useState(false)
  const connector = connectors.data?.items.find((c) => c.id === selected)
  return (
    <section aria-label="Connectors">
      <div class="svc-row">
        <h1>Connectors</h1>
        <span class="svc-spacer" />
        <button type="button" class="svc-button svc-primary" disabled={creating} onClick={() => setCreating(true)}>
          New connector
        </button>
      </div>
      <ErrorBox error={connectors.error} />
      {creating && (
        <ConnectorEditor
          initial={starter}
          onCancel={() => setCreating(false)}
          onSaved={(saved) => {
            setCreating(false)
            setSelected(saved.connectorId)
            connectors.reload()
          }}
        />
      )}
      {connector !== undefined && (
        <ConnectorDetail key={connector.id} connector={connector} onChanged={connectors.reload} />
      )}
      <div class="svc-card svc-table-scroll">
        <table data-testid="connectors">
          <TableHead columns={["Connector", "Name", "Namespace", "Version", "State", "Type"]} />
          <tbody>
            {(connectors.data?.items ?? []).map((c) => (
              <tr key={c.id} data-connector-id={c.id}>
                <td>
                  <ConnectorIdentity connector={c} compact />
                </td>
                <td class="svc-mono">{c.name}</td>
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
