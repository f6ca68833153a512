/** The admin UI's form that creates a webhook endpoint (docs/webhooks.md). */
import type { WebhookWithSecret } from "@svc/domain/Webhook"
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { adminApi } from "./adminApi.ts"
import { ErrorBox, Field } from "./common.tsx"

const list = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

/** The form that creates a webhook (its answer carries the signing secret, shown once). */
export const WebhookForm = (props: { readonly onCreated: (created: WebhookWithSecret) => void }) => {
  const [namespace, setNamespace] = useState("root")
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState("")
  const [selector, setSelector] = useState("")
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      const created = await adminApi.createWebhook({
        namespace: namespace.trim(),
        url: url.trim(),
        ...(list(events).length === 0 ? {} : { events: list(events) }),
        ...(selector.trim() === "" ? {} : { label_selector: selector.trim() })
      })
      props.onCreated(created)
    } catch (e) {
      setError(describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="svc-card" onSubmit={submit} noValidate aria-label="New webhook">
      <h2>New webhook</h2>
      <ErrorBox error={error} />
      <div class="svc-grid">
        <Field id="wh-namespace" label="Namespace" value={namespace} onInput={setNamespace} />
        <Field id="wh-url" label="URL" value={url} onInput={setUrl} placeholder="https://app.example.com/hooks" />
        <Field
          id="wh-events"
          label="Event types (comma separated)"
          value={events}
          onInput={setEvents}
          placeholder="all"
        />
        <Field id="wh-selector" label="Label selector" value={selector} onInput={setSelector} placeholder="any" />
      </div>
      <button type="submit" class="svc-button svc-primary" disabled={busy}>
        Create webhook
      </button>
    </form>
  )
}
