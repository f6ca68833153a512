/**
 * Webhook endpoints (docs/webhooks.md): the list (namespace filter), a form that creates one and
 * shows its signing secret once, and per endpoint its recent deliveries (event, webhook-id, state,
 * attempts, last status) with redeliver and send-test.
 */
import type { Webhook, WebhookWithSecret } from "@svc/domain/Webhook"
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { adminApi } from "./adminApi.ts"
import { ErrorBox, Field, TableHead, useLoad } from "./common.tsx"

const list = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

const CreateForm = (props: { readonly onCreated: (created: WebhookWithSecret) => void }) => {
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

const Deliveries = (props: { readonly webhook: Webhook }) => {
  const [message, setMessage] = useState<string | undefined>()
  const [error, setError] = useState<string | undefined>()
  const deliveries = useLoad(() => adminApi.listDeliveries(props.webhook.id, { limit: "50" }), [props.webhook.id])
  const act = async (what: () => Promise<string>) => {
    setError(undefined)
    try {
      setMessage(await what())
      deliveries.reload()
    } catch (e) {
      setError(describeError(e))
    }
  }
  return (
    <section class="svc-card" aria-label={`Deliveries of ${props.webhook.name}`}>
      <div class="svc-row">
        <h2>Deliveries of {props.webhook.name}</h2>
        <span class="svc-spacer" />
        <button
          type="button"
          class="svc-button"
          onClick={() =>
            act(async () => {
              const sent = await adminApi.testWebhook(props.webhook.id)
              return `Queued a test event (${sent.delivery_id}).`
            })
          }
        >
          Send test
        </button>
        <button type="button" class="svc-button" onClick={() => deliveries.reload()}>
          Refresh
        </button>
      </div>
      {message !== undefined && (
        <p class="svc-success" role="status">
          {message}
        </p>
      )}
      <ErrorBox error={error ?? deliveries.error} />
      <table data-testid="webhook-deliveries">
        <TableHead columns={["Event", "Webhook id", "State", "Attempts", "Last status", "Next attempt", "Created"]} />
        <tbody>
          {(deliveries.data?.items ?? []).map((d) => (
            <tr key={d.id} data-delivery-id={d.id} data-state={d.state}>
              <td class="svc-mono">{d.event_type}</td>
              <td class="svc-mono">{d.webhook_id}</td>
              <td>{d.state}</td>
              <td>{d.attempts}</td>
              <td>{d.last_status_code ?? d.last_error ?? "-"}</td>
              <td>{d.next_attempt_at ?? "-"}</td>
              <td>{d.created_at}</td>
              <td>
                <button
                  type="button"
                  class="svc-button"
                  aria-label={`Redeliver ${d.id}`}
                  onClick={() =>
                    act(async () => {
                      await adminApi.redeliver(props.webhook.id, d.id)
                      return `Redelivering ${d.id}.`
                    })
                  }
                >
                  Redeliver
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}

/** The webhooks screen. */
export const WebhooksView = () => {
  const [namespace, setNamespace] = useState("")
  const [creating, setCreating] = useState(false)
  const [secret, setSecret] = useState<{ readonly name: string; readonly secret: string } | undefined>()
  const [open, setOpen] = useState<Webhook | undefined>()
  const hooks = useLoad(() => adminApi.listWebhooks({ namespace, limit: "100" }), [namespace])
  return (
    <section aria-label="Webhooks">
      <div class="svc-row">
        <h1>Webhooks</h1>
        <span class="svc-spacer" />
        <button type="button" class="svc-button svc-primary" onClick={() => setCreating(true)}>
          New webhook
        </button>
      </div>
      {secret !== undefined && (
        <div class="svc-card" role="status" aria-label="Signing secret">
          <p>
            Signing secret of {secret.name}, shown only now (rotate it to get a new one):{" "}
            <code data-testid="webhook-secret">{secret.secret}</code>
          </p>
          <button type="button" class="svc-button" onClick={() => setSecret(undefined)}>
            Done
          </button>
        </div>
      )}
      {creating && (
        <CreateForm
          onCreated={(created) => {
            setCreating(false)
            setSecret({ name: created.name, secret: created.secret })
            hooks.reload()
          }}
        />
      )}
      <div class="svc-card">
        <Field id="wh-filter" label="Namespace filter" value={namespace} onInput={setNamespace} placeholder="all" />
        <ErrorBox error={hooks.error} />
        <table data-testid="webhooks">
          <TableHead columns={["Name", "Namespace", "URL", "Events", "State"]} />
          <tbody>
            {(hooks.data?.items ?? []).map((hook) => (
              <tr key={hook.id} data-webhook-id={hook.id}>
                <td>{hook.name}</td>
                <td class="svc-mono">{hook.namespace}</td>
                <td class="svc-mono">{hook.url}</td>
                <td class="svc-mono">{hook.events.join(", ")}</td>
                <td>{hook.state}</td>
                <td>
                  <button
                    type="button"
                    class="svc-button"
                    aria-label={`Deliveries of ${hook.name}`}
                    onClick={() => setOpen(hook)}
                  >
                    Deliveries
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {open !== undefined && <Deliveries key={open.id} webhook={open} />}
    </section>
  )
}
