import { useState } from "preact/hooks"
import { ErrorBox, Field, useLoad } from "./common.tsx"
import { adminApi } from "./adminApi.ts"

export const SearchView = () => {
  const [q, setQ] = useState("")
  const [type, setType] = useState("")
  const [query, setQuery] = useState<{ q: string; type: string } | undefined>()
  const results = useLoad(
    async () =>
      query === undefined
        ? undefined
        : adminApi.searchResources({
            q: query.q,
            resourceType: query.type
          }),
    [query]
  )
  return (
    <section aria-label="Search">
      <h1>Search</h1>
      <form
        class="svc-card svc-row"
        aria-label="Search resources"
        onSubmit={(e) => {
          e.preventDefault()
          setQuery({ q, type })
        }}
      >
        <Field id="search-q" label="Name or label value" value={q} onInput={setQ} />
        <div class="svc-field">
          <label for="search-type">Resource type</label>
          <select id="search-type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">any</option>
            {["namespaces", "actors", "connectors", "connections", "keys", "rate-limits", "webhooks"].map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" class="svc-button svc-primary">
          Search
        </button>
      </form>
      <ErrorBox error={results.error} />
      {results.data !== undefined && (
        <div class="svc-card svc-table-scroll">
          {results.data.items.length === 0 ? (
            <p class="svc-muted">Nothing found.</p>
          ) : (
            <table data-testid="search-results">
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col">Name</th>
                  <th scope="col">Namespace</th>
                  <th scope="col">Id</th>
                </tr>
              </thead>
              <tbody>
                {results.data.items.map((hit) => (
                  <tr key={hit.id}>
                    <td>{hit.resourceType}</td>
                    <td>{hit.name}</td>
                    <td class="svc-mono">{hit.namespace}</td>
                    <td class="svc-mono">{hit.id}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </section>
  )
}
