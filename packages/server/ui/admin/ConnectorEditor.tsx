/**
 * The connector definition editor: a new connector (namespace, name, definition) or a new draft
 * version of one, the definition as YAML or JSON text. The server validates it
 * (`400 invalid_definition`) and each problem is listed with its path.
 */
import type { Connector } from "@svc/domain/Connector"
import { useState } from "preact/hooks"
import { ApiError, describeError, type ErrorDetail } from "../shared/api.ts"
import { ErrorBox, Field } from "./common.tsx"
import { adminApi } from "./adminApi.ts"

/** A server detail's path inside the definition document (`body.definition.auth.type` → `auth.type`). */
export const definitionPath = (field: string): string =>
  field.replace(/^body\./, "").replace(/^definition\.?/, "") || "(document)"

export interface ConnectorEditorProps {
  /** Absent: a new connector. Present: a new version of this connector. */
  readonly connector?: Connector
  /** The text the editor starts with (the latest definition for a new version). */
  readonly initial: string
  readonly onSaved: (saved: { readonly connectorId: string; readonly version: number }) => void
  readonly onCancel: () => void
}

export const ConnectorEditor = (props: ConnectorEditorProps) => {
  const [namespace, setNamespace] = useState("root")
  const [name, setName] = useState("")
  const [text, setText] = useState(props.initial)
  const [problems, setProblems] = useState<ReadonlyArray<ErrorDetail>>([])
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const creating = props.connector === undefined
  const title = creating ? "New connector" : `New version of ${props.connector?.name}`

  const submit = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    setProblems([])
    if (text.trim() === "") {
      setError("Write the definition as YAML or JSON.")
      return
    }
    if (creating && namespace.trim() === "") {
      setError("A namespace is required.")
      return
    }
    setBusy(true)
    try {
      if (props.connector === undefined) {
        const created = await adminApi.createConnector({
          namespace: namespace.trim(),
          ...(name.trim() === "" ? {} : { name: name.trim() }),
          definition: text
        })
        props.onSaved({ connectorId: created.id, version: created.version })
      } else {
        const version = await adminApi.createVersion(props.connector.id, text)
        props.onSaved({ connectorId: version.connectorId, version: version.version })
      }
    } catch (e) {
      setError(e instanceof ApiError ? `${e.message} (${e.code})` : describeError(e))
      if (e instanceof ApiError) setProblems(e.details)
    } finally {
      setBusy(false)
    }
  }

  return (
    <form class="svc-card svc-form-wide" onSubmit={submit} noValidate aria-label={title}>
      <h2>{title}</h2>
      {creating && (
        <div class="svc-row">
          <Field id="cxr-namespace" label="Namespace" value={namespace} onInput={setNamespace} />
          <Field id="cxr-name" label="Name" value={name} onInput={setName} placeholder="generated when empty" />
        </div>
      )}
      <div class="svc-field">
        <label for="cxr-definition">Definition (YAML or JSON)</label>
        <textarea
          id="cxr-definition"
          class="svc-editor"
          spellcheck={false}
          value={text}
          aria-invalid={problems.length > 0}
          {...(problems.length > 0 ? { "aria-describedby": "cxr-definition-problems" } : {})}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </div>
      <ErrorBox error={error} />
      {problems.length > 0 && (
        <ul id="cxr-definition-problems" class="svc-problems" data-testid="definition-problems">
          {problems.map((p) => (
            <li key={`${p.field}:${p.message}`}>
              <span class="svc-mono">{definitionPath(p.field)}</span>: {p.message}
            </li>
          ))}
        </ul>
      )}
      <div class="svc-row">
        <button type="submit" class="svc-button svc-primary" disabled={busy}>
          {creating ? "Create connector" : "Save draft version"}
        </button>
        <button type="button" class="svc-button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
}
