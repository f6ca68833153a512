/**
 * Rate-limit rules: the list (namespace filter) and a form that creates or edits one rule — mode,
 * algorithm with its parameters, selector (methods, path prefix), bucket dimensions and labels —
 * with messages per field, checked here first and then from the server's `details`.
 */
import type { RateLimit } from "@svc/domain/RateLimit"
import { useState } from "preact/hooks"
import { ApiError, describeError, type Page } from "../shared/api.ts"
import { api, ErrorBox, Field, KeyValues, TableHead, useLoad } from "./common.tsx"

type Algorithm = "fixed_window" | "sliding_window" | "token_bucket"

/** The parts of a rule's definition the form edits. */
interface DefinitionShape {
  readonly mode?: "enforce" | "observe"
  readonly selector?: {
    readonly methods?: ReadonlyArray<string>
    readonly path_match?: { readonly kind: string; readonly value: string }
  }
  readonly bucket?: { readonly dimensions?: ReadonlyArray<string> }
  readonly algorithm?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
}

const shapeOf = (rule: RateLimit): DefinitionShape => rule.definition as unknown as DefinitionShape

interface FormState {
  readonly name: string
  readonly namespace: string
  readonly mode: "enforce" | "observe"
  readonly algorithm: Algorithm
  readonly window: string
  readonly limit: string
  readonly capacity: string
  readonly refillRate: string
  readonly methods: string
  readonly pathPrefix: string
  readonly dimensions: string
  readonly labels: string
}

const emptyForm: FormState = {
  name: "",
  namespace: "root",
  mode: "enforce",
  algorithm: "fixed_window",
  window: "1m",
  limit: "100",
  capacity: "10",
  refillRate: "1",
  methods: "",
  pathPrefix: "",
  dimensions: "",
  labels: ""
}

const durationPattern = /^(?:\d+(?:\.\d+)?(?:d|h|ms|m|s))+$/
const list = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

/** The form of an existing rule. */
const formOf = (rule: RateLimit): FormState => {
  const definition = shapeOf(rule)
  const algorithm = (Object.keys(definition.algorithm ?? {})[0] ?? "fixed_window") as Algorithm
  const params = definition.algorithm?.[algorithm] ?? {}
  return {
    name: rule.name,
    namespace: rule.namespace,
    mode: definition.mode ?? "enforce",
    algorithm,
    window: String(params.window ?? "1m"),
    limit: String(params.limit ?? ""),
    capacity: String(params.capacity ?? ""),
    refillRate: String(params.refill_rate ?? ""),
    methods: (definition.selector?.methods ?? []).join(", "),
    pathPrefix: definition.selector?.path_match?.kind === "prefix" ? definition.selector.path_match.value : "",
    dimensions: (definition.bucket?.dimensions ?? []).join(", "),
    labels: Object.entries(rule.labels)
      .filter(([key]) => !key.startsWith("svc/"))
      .map(([key, value]) => `${key}=${value}`)
      .join(", ")
  }
}

/** Client-side checks: problems by form field. */
const check = (form: FormState): Record<string, string> => {
  const problems: Record<string, string> = {}
  if (form.namespace.trim() === "") problems.namespace = "A namespace is required."
  const positiveInteger = (text: string) => /^[1-9]\d*$/.test(text.trim())
  const positiveNumber = (text: string) => Number.isFinite(Number(text)) && Number(text) > 0
  if (form.algorithm !== "token_bucket") {
    if (!durationPattern.test(form.window.trim())) problems.window = "A duration such as 30s, 1m or 1h."
    if (!positiveInteger(form.limit)) problems.limit = "A whole number greater than 0."
  } else {
    if (!positiveInteger(form.capacity)) problems.capacity = "A whole number greater than 0."
    if (!positiveNumber(form.refillRate)) problems.refillRate = "A number greater than 0 (tokens per second)."
  }
  for (const pair of list(form.labels)) {
    if (!/^[^=]+=.*$/.test(pair)) problems.labels = "Labels are key=value pairs separated by commas."
  }
  return problems
}

const definitionOf = (form: FormState) => {
  const methods = list(form.methods).map((m) => m.toUpperCase())
  const selector: Record<string, unknown> = {}
  if (methods.length > 0) selector.methods = methods
  if (form.pathPrefix.trim() !== "") selector.path_match = { kind: "prefix", value: form.pathPrefix.trim() }
  const algorithm =
    form.algorithm === "token_bucket"
      ? { token_bucket: { capacity: Number(form.capacity), refill_rate: Number(form.refillRate) } }
      : { [form.algorithm]: { window: form.window.trim(), limit: Number(form.limit) } }
  return { mode: form.mode, selector, bucket: { dimensions: list(form.dimensions) }, algorithm }
}

const labelsOf = (form: FormState) =>
  Object.fromEntries(
    list(form.labels).map((pair) => [pair.slice(0, pair.indexOf("=")).trim(), pair.slice(pair.indexOf("=") + 1).trim()])
  )

/** Which form field a server detail (`body.definition.algorithm.fixed_window.limit`) is about. */
const fieldOfDetail = (field: string): keyof FormState | undefined => {
  const last = field.split(".").pop() ?? ""
  const byName: Record<string, keyof FormState> = {
    namespace: "namespace",
    name: "name",
    window: "window",
    limit: "limit",
    capacity: "capacity",
    refill_rate: "refillRate",
    methods: "methods",
    path_match: "pathPrefix",
    value: "pathPrefix",
    dimensions: "dimensions",
    labels: "labels",
    mode: "mode"
  }
  if (field.includes(".labels")) return "labels"
  if (field.includes(".dimensions")) return "dimensions"
  if (field.includes(".methods")) return "methods"
  return byName[last]
}

const RuleForm = (props: {
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
          ? await api.send<RateLimit>("POST", "/api/v1/rate-limits", {
              ...body,
              namespace: form.namespace.trim(),
              ...(form.name.trim() === "" ? {} : { name: form.name.trim() })
            })
          : await api.send<RateLimit>("PATCH", `/api/v1/rate-limits/${props.editing.id}`, body)
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

const summary = (rule: RateLimit): string => {
  const definition = shapeOf(rule)
  const [name, params] = Object.entries(definition.algorithm ?? {})[0] ?? ["?", {}]
  return `${name} ${Object.entries(params as Record<string, unknown>)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ")}`
}

/** The rate-limit screen. */
export const RateLimitsView = () => {
  const [namespace, setNamespace] = useState("")
  const [editing, setEditing] = useState<RateLimit | "new" | undefined>()
  const [saved, setSaved] = useState<string | undefined>()
  const rules = useLoad(() => api.get<Page<RateLimit>>("/api/v1/rate-limits", { namespace, limit: "100" }), [namespace])
  return (
    <section aria-label="Rate limits">
      <div class="svc-row">
        <h1>Rate limits</h1>
        <span class="svc-spacer" />
        <button type="button" class="svc-button svc-primary" onClick={() => setEditing("new")}>
          New rate limit
        </button>
      </div>
      {saved !== undefined && (
        <p class="svc-success" role="status">
          {saved}
        </p>
      )}
      {editing !== undefined && (
        <RuleForm
          key={editing === "new" ? "new" : editing.id}
          editing={editing === "new" ? undefined : editing}
          onCancel={() => setEditing(undefined)}
          onSaved={(rule) => {
            setEditing(undefined)
            setSaved(`Saved ${rule.name} (${rule.id}).`)
            rules.reload()
          }}
        />
      )}
      <div class="svc-card">
        <Field id="rl-filter" label="Namespace filter" value={namespace} onInput={setNamespace} placeholder="all" />
        <ErrorBox error={rules.error} />
        <table data-testid="rate-limits">
          <TableHead columns={["Name", "Namespace", "Mode", "Algorithm", "Labels"]} />
          <tbody>
            {(rules.data?.items ?? []).map((rule) => (
              <tr key={rule.id} data-rate-limit-id={rule.id}>
                <td>{rule.name}</td>
                <td class="svc-mono">{rule.namespace}</td>
                <td>{shapeOf(rule).mode}</td>
                <td class="svc-mono">{summary(rule)}</td>
                <td>
                  <KeyValues values={rule.labels} />
                </td>
                <td>
                  <button
                    type="button"
                    class="svc-button"
                    aria-label={`Edit ${rule.name}`}
                    onClick={() => setEditing(rule)}
                  >
                    Edit
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
