/**
 * Request events: the filters of `GET /api/v1/metrics/request-events`, the matching events, and
 * one event in full with its recording (`…/{id}/recording`) when it has one.
 */
import { useState } from "preact/hooks"
import { ApiError, describeError } from "../shared/api.ts"
import { ErrorBox, Field, KeyValues, TableHead, useLoad } from "./common.tsx"
import { adminApi } from "./adminApi.ts"

interface RequestEvent {
  readonly id: string
  readonly timestamp: string
  readonly namespace: string
  readonly type: string
  readonly method: string
  readonly host: string
  readonly path: string
  readonly response_status_code: number | null
  readonly response_source: string
  readonly connector_id: string | null
  readonly connection_id: string | null
  readonly duration_ms: number
  readonly labels: Readonly<Record<string, string>>
  readonly rate_limit_id: string | null
  readonly full_request_recorded: boolean
}

interface RecordedBody {
  readonly base64?: string
  readonly totalBytes?: number
  readonly truncated?: boolean
  readonly skipped?: string
}

const filterNames = [
  ["connectorId", "Connector id"],
  ["connectionId", "Connection id"],
  ["method", "Method"],
  ["statusCodeRange", "Status range (200-299)"],
  ["response_source", "Response source"],
  ["rate_limit_id", "Rate limit id"],
  ["path", "Path"],
  ["labelSelector", "Label selector"]
] as const
type FilterName = (typeof filterNames)[number][0]

const bodyText = (body: RecordedBody | undefined): string => {
  if (body === undefined) return "(none)"
  if (body.skipped !== undefined) return `(not recorded: ${body.skipped})`
  if (body.base64 === undefined) return "(empty)"
  const bytes = Uint8Array.from(atob(body.base64), (c) => c.charCodeAt(0))
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes)
  if (text === "" && !body.truncated) return "(empty body)"
  return `${text}${body.truncated ? `\n… (${body.totalBytes} bytes in total)` : ""}`
}

const Headers = (props: { readonly headers: Readonly<Record<string, string | ReadonlyArray<string>>> }) => (
  <pre>
    {Object.keys(props.headers).length === 0
      ? "(no headers)"
      : Object.entries(props.headers)
          .map(([k, v]) => `${k}: ${typeof v === "string" ? v : v.join(", ")}`)
          .join("\n")}
  </pre>
)

const EventDetail = (props: { readonly event: RequestEvent; readonly onClose: () => void }) => {
  const recording = useLoad(async () => {
    if (!props.event.full_request_recorded) return undefined
    try {
      return await adminApi.getRecording(props.event.id)
    } catch (e) {
      if (e instanceof ApiError && e.code === "recording_not_found") return undefined
      throw e
    }
  }, [props.event.id])
  const r = recording.data
  return (
    <section class="svc-card" aria-label="Request event" data-testid="event-detail">
      <div class="svc-row">
        <h2>
          {props.event.method} {props.event.host}
          {props.event.path}
        </h2>
        <span class="svc-spacer" />
        <button type="button" class="svc-button" onClick={props.onClose}>
          Close
        </button>
      </div>
      <p class="svc-mono">{props.event.id}</p>
      <KeyValues values={props.event.labels} />
      <pre>{JSON.stringify(props.event, null, 2)}</pre>
      <h3>Recording</h3>
      <ErrorBox error={recording.error} />
      {recording.loading ? (
        <p role="status">Loading…</p>
      ) : r === undefined ? (
        <p class="svc-muted">This request was not recorded.</p>
      ) : (
        <div data-testid="recording">
          <h4>
            Request: {r.request.method} {r.request.url}
          </h4>
          <Headers headers={r.request.headers} />
          <pre>{bodyText(r.request.body)}</pre>
          {r.response !== undefined ? (
            <>
              <h4>Response: {r.response.status}</h4>
              <Headers headers={r.response.headers} />
              <pre data-testid="recording-response-body">{bodyText(r.response.body)}</pre>
            </>
          ) : (
            <pre>{JSON.stringify(r.error, null, 2)}</pre>
          )}
        </div>
      )}
    </section>
  )
}

/** The request-event screen. */
export const EventsView = () => {
  const [draft, setDraft] = useState<Partial<Record<FilterName, string>>>({})
  const [filters, setFilters] = useState<Partial<Record<FilterName, string>>>({})
  const [selected, setSelected] = useState<RequestEvent | undefined>()
  const [error, setError] = useState<string | undefined>()
  const events = useLoad(
    () =>
      adminApi.listRequestEvents({ ...filters, limit: "50" }).catch((e: unknown) => {
        setError(describeError(e))
        return { items: [] }
      }),
    [filters]
  )
  return (
    <section aria-label="Request events">
      <h1>Request events</h1>
      <form
        class="svc-card"
        onSubmit={(e) => {
          e.preventDefault()
          setError(undefined)
          setFilters({ ...draft })
        }}
      >
        <div class="svc-grid">
          {filterNames.map(([name, label]) => (
            <Field
              key={name}
              id={`ev-${name}`}
              label={label}
              value={draft[name] ?? ""}
              onInput={(value) => setDraft({ ...draft, [name]: value })}
            />
          ))}
        </div>
        <button type="submit" class="svc-button svc-primary">
          Apply filters
        </button>
      </form>
      <ErrorBox error={error ?? events.error} />
      {selected !== undefined && <EventDetail event={selected} onClose={() => setSelected(undefined)} />}
      <div class="svc-card svc-table-scroll">
        <table data-testid="request-events">
          <TableHead columns={["Time", "Request", "Status", "Source", "Duration", "Connection"]} />
          <tbody>
            {(events.data?.items ?? []).map((event) => (
              <tr key={event.id} data-event-id={event.id}>
                <td>{new Date(event.timestamp).toLocaleString()}</td>
                <td class="svc-mono">
                  {event.method} {event.host}
                  {event.path}
                </td>
                <td>{event.response_status_code ?? "—"}</td>
                <td>{event.response_source}</td>
                <td>{event.duration_ms} ms</td>
                <td class="svc-mono">{event.connection_id ?? "—"}</td>
                <td>
                  <button
                    type="button"
                    class="svc-button"
                    aria-label={`View event ${event.id}`}
                    onClick={() => setSelected(event)}
                  >
                    View{event.full_request_recorded ? " (recorded)" : ""}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {events.data?.items.length === 0 && <p class="svc-muted">No request events match.</p>}
      </div>
    </section>
  )
}
