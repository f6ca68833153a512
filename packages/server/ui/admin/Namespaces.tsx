import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { ErrorBox, Field, KeyValues, useLoad } from "./common.tsx"
import { adminApi } from "./adminApi.ts"

export const NamespacesView = () => {
  const namespaces = useLoad(() => adminApi.listNamespaces({ limit: "200" }), [])
  const [path, setPath] = useState("")
  const [error, setError] = useState<string | undefined>()
  const create = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    try {
      await adminApi.createNamespace(path.trim())
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
      <div class="svc-card svc-table-scroll">
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
