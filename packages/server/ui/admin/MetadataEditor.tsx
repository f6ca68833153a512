/** Labels or annotations of one connection: listed (system labels folded away), set and removed. */
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { ErrorBox, Field } from "./common.tsx"
import { adminApi } from "./adminApi.ts"

/** Editable key/value metadata (labels or annotations) of one connection. */
export const MetadataEditor = (props: {
  readonly connectionId: string
  readonly kind: "labels" | "annotations"
  readonly values: Readonly<Record<string, string>>
  readonly onChanged: () => void
}) => {
  const [key, setKey] = useState("")
  const [value, setValue] = useState("")
  const [error, setError] = useState<string | undefined>()
  const run = async (call: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await call()
      props.onChanged()
    } catch (e) {
      setError(describeError(e))
    }
  }
  const title = props.kind === "labels" ? "Labels" : "Annotations"
  return (
    <div>
      <h3>{title}</h3>
      <ul class="svc-list">
        {Object.entries(props.values)
          .filter(([k]) => !k.startsWith("svc/"))
          .map(([k, v]) => (
            <li key={k}>
              <span class="svc-mono">
                {k}={v}
              </span>
              <span class="svc-spacer" />
              <button
                type="button"
                class="svc-button"
                aria-label={`Remove ${props.kind === "labels" ? "label" : "annotation"} ${k}`}
                onClick={() => run(() => adminApi.removeMetadata(props.kind, props.connectionId, k))}
              >
                Remove
              </button>
            </li>
          ))}
      </ul>
      {Object.keys(props.values).some((k) => k.startsWith("svc/")) && (
        <details>
          <summary>System labels (read-only)</summary>
          <pre>
            {Object.entries(props.values)
              .filter(([k]) => k.startsWith("svc/"))
              .map(([k, v]) => `${k}=${v}`)
              .join("\n")}
          </pre>
        </details>
      )}
      <form
        class="svc-row"
        onSubmit={(e) => {
          e.preventDefault()
          run(async () => {
            await adminApi.setMetadata(props.kind, props.connectionId, key.trim(), value)
            setKey("")
            setValue("")
          })
        }}
      >
        <Field id={`${props.kind}-key`} label={`${title} key`} value={key} onInput={setKey} />
        <Field id={`${props.kind}-value`} label={`${title} value`} value={value} onInput={setValue} />
        <button type="submit" class="svc-button">
          Set
        </button>
      </form>
      <ErrorBox error={error} />
    </div>
  )
}
