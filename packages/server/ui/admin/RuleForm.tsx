/** The rate-limit rule form (create or edit), over the model of RateLimitForm.ts. */
import type { RateLimit } from "@svc/domain/RateLimit"
import { useState } from "preact/hooks"
import { ApiError, describeError } from "../shared/api.ts"
import { ErrorBox, Field } from "./common.tsx"
import { check, definitionOf, emptyForm, type FormState, fieldOfDetail, formOf, labelsOf } from "./RateLimitForm.ts"
import { adminApi } from "./adminApi.ts"

/** The form that creates or edits one rule; messages per field, from here first, then from the server. */
export const RuleForm = (props: {
  readonly editing: RateLimit | undefined
  readonly onSaved: (rule: RateLimit) => void
  readonly onCancel: () => void
}) => {
  const [form, setForm] = useState<FormState>(props.editing === undefined ? emptyForm : formOf(props.editing))
  const [problems, setProblems] = useState<Record<string, string>>({})
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const set = (key: keyof FormState) => (value: string) => setForm({ ...form, [key]: value })

  const submit = async (event: Event) => {
    event.preventDefault()
    const found = check(form)
    setProblems(found)
    setError(undefined)
    if (Object.keys(found).length > 0) return
    setBusy(true)
    try {
      const body = { definition: definitionOf(form), labels: labelsOf(form) }
      const saved =
        props.editing === undefined
          ? await adminApi.createRateLimit({
              ...body,
              namespace: form.namespace.trim(),
              ...(form.name.trim() === "" ? {} : { name: form.name.trim() })
            })
          : await adminApi.updateRateLimit(props.editing.id, body)
      props.onSaved(saved)
    } catch (e) {
      if (e instanceof ApiError) {
        const fromServer: Record<string, string> = {}
        const rest: Array<string> = []
        for (const detail of e.details) {
          const field = fieldOfDetail(detail.field)
          if (field === undefined) rest.push(`${detail.field}: ${detail.message}`)
          else fromServer[field] = detail.message
        }
        setProblems(fromServer)
        setError(`${e.message} (${e.code})${rest.length > 0 ? `: ${rest.join("; ")}` : ""}`)
      } else setError(describeError(e))
    } finally {
      setBusy(false)
    }
  }

  const id = (key: string) => `rl-${key}`
  return (
    <form
      class="svc-card"
      onSubmit={submit}
      noValidate
      aria-label={props.editing ? "Edit rate limit" : "New rate limit"}
    >
      <h2>{props.editing === undefined ? "New rate limit" : `Edit ${props.editing.name}`}</h2>
      <ErrorBox error={error} />
      <div class="svc-grid">
        <Field id={id("name")} label="Name" value={form.name} onInput={set("name")} error={problems.name} />
        <Field
          id={id("namespace")}
          label="Namespace"
          value={form.namespace}
          onInput={set("namespace")}
          error={problems.namespace}
        />
        <div class="svc-field">
          <label for={id("mode")}>Mode</label>
          <select id={id("mode")} value={form.mode} onChange={(e) => set("mode")(e.currentTarget.value)}>
            <option value="enforce">enforce</option>
            <option value="observe">observe</option>
          </select>
        </div>
        <div class="svc-field">
          <label for={id("algorithm")}>Algorithm</label>
          <select id={id("algorithm")} value={form.algorithm} onChange={(e) => set("algorithm")(e.currentTarget.value)}>
            <option value="fixed_window">fixed window</option>
            <option value="sliding_window">sliding window</option>
            <option value="token_bucket">token bucket</option>
          </select>
        </div>
        {form.algorithm === "token_bucket" ? (
          <>
            <Field
              id={id("capacity")}
              label="Capacity"
              value={form.capacity}
              onInput={set("capacity")}
              error={problems.capacity}
            />
            <Field
              id={id("refill")}
              label="Refill rate (tokens/s)"
              value={form.refillRate}
              onInput={set("refillRate")}
              error={problems.refillRate}
            />
          </>
        ) : (
          <>
            <Field
              id={id("window")}
              label="Window"
              value={form.window}
              onInput={set("window")}
              error={problems.window}
            />
            <Field id={id("limit")} label="Limit" value={form.limit} onInput={set("limit")} error={problems.limit} />
          </>
        )}
        <Field
          id={id("methods")}
          label="Methods (comma separated)"
          value={form.methods}
          onInput={set("methods")}
          error={problems.methods}
          placeholder="all"
        />
        <Field
          id={id("path")}
          label="Path prefix"
          value={form.pathPrefix}
          onInput={set("pathPrefix")}
          error={problems.pathPrefix}
          placeholder="any path"
        />
        <Field
          id={id("label-selector")}
          label="Label selector"
          value={form.labelSelector}
          onInput={set("labelSelector")}
          error={problems.labelSelector}
          placeholder="any labels (e.g. tier in (gold), team=billing)"
        />
        <Field
          id={id("dimensions")}
          label="Bucket dimensions"
          value={form.dimensions}
          onInput={set("dimensions")}
          error={problems.dimensions}
          placeholder="one global counter"
        />
        <Field
          id={id("labels")}
          label="Labels (key=value, …)"
          value={form.labels}
          onInput={set("labels")}
          error={problems.labels}
        />
      </div>
      <div class="svc-row">
        <button type="submit" class="svc-button svc-primary" disabled={busy}>
          {props.editing === undefined ? "Create rate limit" : "Save rate limit"}
        </button>
        <button type="button" class="svc-button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}
