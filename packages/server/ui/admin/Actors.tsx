/**
 * The actor screen: who may call svc (external id = the token's `sub`), where they live, their
 * permissions and where they come from (API or `system_auth.actors`), and a form to add one.
 */
import type { Actor } from "@svc/domain/Actor"
import { useState } from "preact/hooks"
import { ApiError, describeError } from "../shared/api.ts"
import { ErrorBox, Field, TableHead, useLoad } from "./common.tsx"
import { checkActor, parsePermissions, permissionsText } from "./ActorForm.ts"
import { adminApi } from "./adminApi.ts"

const ActorForm = (props: { readonly onSaved: (actor: Actor) => void; readonly onCancel: () => void }) => {
  const [form, setForm] = useState({ externalId: "", namespace: "root", permissions: "" })
  const [problems, setProblems] = useState<Record<string, string>>({})
  const [error, setError] = useState<string | undefined>()
  const set = (key: keyof typeof form) => (value: string) => setForm({ ...form, [key]: value })
  const submit = async (event: Event) => {
    event.preventDefault()
    const found = checkActor(form)
    setProblems(found)
    setError(undefined)
    const parsed = parsePermissions(form.permissions)
    if (Object.keys(found).length > 0 || "problem" in parsed) return
    try {
      const actor = await adminApi.createActor({
        externalId: form.externalId.trim(),
        namespace: form.namespace.trim(),
        permissions: parsed.permissions
      })
      props.onSaved(actor)
    } catch (e) {
      setError(describeError(e))
      if (e instanceof ApiError) {
        const byField: Record<string, string> = {}
        for (const d of e.details) {
          const key = d.field.replace(/^body\./, "").split(".")[0] ?? ""
          if (key === "externalId" || key === "namespace" || key === "permissions") byField[key] = d.message
        }
        setProblems(byField)
      }
    }
  }
  return (
    <form class="svc-card svc-form-wide" onSubmit={submit} noValidate aria-label="New actor">
      <h2>New actor</h2>
      <ErrorBox error={error} />
      <div class="svc-row">
        <Field
          id="actor-external-id"
          label="External id"
          value={form.externalId}
          onInput={set("externalId")}
          error={problems.externalId}
        />
        <Field
          id="actor-namespace"
          label="Namespace"
          value={form.namespace}
          onInput={set("namespace")}
          error={problems.namespace}
        />
      </div>
      <div class="svc-field">
        <label for="actor-permissions">Permissions (one per line: namespace resources verbs)</label>
        <textarea
          id="actor-permissions"
          class="svc-editor svc-editor-short"
          spellcheck={false}
          placeholder="root.acme connections,notifications get,list,create"
          value={form.permissions}
          aria-invalid={problems.permissions !== undefined}
          {...(problems.permissions === undefined ? {} : { "aria-describedby": "actor-permissions-error" })}
          onInput={(e) => set("permissions")(e.currentTarget.value)}
        />
        {problems.permissions !== undefined && (
          <p class="svc-field-error" id="actor-permissions-error">
            {problems.permissions}
          </p>
        )}
      </div>
      <div class="svc-row">
        <button type="submit" class="svc-button svc-primary">
          Create actor
        </button>
        <button type="button" class="svc-button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}

export const ActorsView = () => {
  const actors = useLoad(() => adminApi.listActors({ limit: "100" }), [])
  const [creating, setCreating] = useState(false)
  const [saved, setSaved] = useState<string | undefined>()
  return (
    <section aria-label="Actors">
      <div class="svc-row">
        <h1>Actors</h1>
        <span class="svc-spacer" />
        <button type="button" class="svc-button svc-primary" onClick={() => setCreating(true)}>
          New actor
        </button>
      </div>
      {saved !== undefined && (
        <p class="svc-success" role="status">
          {saved}
        </p>
      )}
      {creating && (
        <ActorForm
          onCancel={() => setCreating(false)}
          onSaved={(actor) => {
            setCreating(false)
            setSaved(`Created ${actor.externalId}.`)
            actors.reload()
          }}
        />
      )}
      <ErrorBox error={actors.error} />
      <div class="svc-card svc-table-scroll">
        <table data-testid="actors">
          <TableHead columns={["External id", "Namespace", "Source", "Permissions"]} />
          <tbody>
            {(actors.data?.items ?? []).map((actor) => (
              <tr key={actor.id} data-actor-id={actor.id}>
                <td class="svc-mono">{actor.externalId}</td>
                <td class="svc-mono">{actor.namespace}</td>
                <td>{actor.source}</td>
                <td>
                  <pre class="svc-permissions">{permissionsText(actor.permissions)}</pre>
                </td>
                <td />
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
