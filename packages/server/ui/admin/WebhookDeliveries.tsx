/** The admin UI's list of one webhook's deliveries (event, webhook-id, state, attempts, last status). */
import type { Webhook } from "@svc/domain/Webhook"
import { useState } from "preact/hooks"
import { describeError } from "../shared/api.ts"
import { adminApi } from "./adminApi.ts"
import { ErrorBox, TableHead, useLoad } from "./common.tsx"

/** One webhook's recent deliveries with send-test and redeliver. */
export const WebhookDeliveries = (props: { readonly webhook: Webhook }) => {
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
