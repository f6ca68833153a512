/** The namespace screen: the tree as a list, and a form to add one. */
import type { Namespace } from "@svc/domain/Namespace"
import { useState } from "preact/hooks"
import { describeError, type Page } from "../shared/api.ts"
import { api, ErrorBox, Field, KeyValues, useLoad } from "./common.tsx"

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
