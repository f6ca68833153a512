/**
 * Webhook endpoints (docs/webhooks.md): the list (namespace filter), a form that creates one and
 * shows its signing secret once, and per endpoint its recent deliveries (event, webhook-id, state,
 * attempts, last status) with redeliver and send-test.
 */
import type { Webhook } from "@svc/domain/Webhook"
import { useState } from "preact/hooks"
import { adminApi } from "./adminApi.ts"
import { ErrorBox, Field, TableHead, useLoad } from "./common.tsx"
import { WebhookDeliveries } from "./WebhookDeliveries.tsx"
import { WebhookForm } from "./WebhookForm.tsx"

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
        <WebhookForm
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
      {open !== undefined && <WebhookDeliveries key={open.id} webhook={open} />}
    </section>
  )
}
