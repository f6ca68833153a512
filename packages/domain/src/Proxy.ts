/**
 * The proxy data plane's wire shapes (spec 2.5, 4.2; API-CONVENTIONS "Proxy"): the `_proxy`
 * envelope and answer, the `_proxy_raw` control headers, and the per-request label snapshot.
 * Pure.
 */
import { Schema } from "effect"
import { isSystemKey, keyProblem, type Labels, labelValueProblem, systemPrefix, UserLabels } from "./Labels.ts"
import { StrictJson } from "./StrictInput.ts"

/** `_proxy_raw`: the absolute upstream URL. */
export const upstreamUrlHeader = "x-svc-upstream-url"
/** `_proxy_raw`: one request label `key=value`; repeatable. */
export const labelHeader = "x-svc-label"

/** An absolute http(s) URL of at most 8 KiB. */
const UpstreamUrl = Schema.String.check(
  Schema.makeFilter((text: string) => {
    if (text.length > 8192) return "the URL is longer than 8192 characters"
    try {
      const url = new URL(text)
      return url.protocol === "http:" || url.protocol === "https:" ? true : "the URL must be http or https"
    } catch {
      return "the URL must be absolute"
    }
  })
)

/** An HTTP method token of at most 32 characters. */
const Method = Schema.String.check(
  Schema.makeFilter((text: string) =>
    /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/.test(text) ? true : "the method must be an HTTP token"
  )
)

/** Standard base64 text. */
const Base64 = Schema.String.check(
  Schema.makeFilter((text: string) =>
    /^[A-Za-z0-9+/]*={0,2}$/.test(text) && text.length % 4 === 0 ? true : "bodyRaw must be base64"
  )
)

/** `POST /api/v1/connections/{id}/_proxy` body. `bodyJson` and `bodyRaw` exclude each other. */
export const ProxyRequest = Schema.Struct({
  url: UpstreamUrl,
  method: Method,
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** User labels for the request event (spec 2.5); `svc/` keys are refused. */
  labels: Schema.optionalKey(UserLabels),
  /** Any JSON within the body limits (`StrictJson`: depth, no NUL or lone surrogates). */
  bodyJson: Schema.optionalKey(StrictJson),
  bodyRaw: Schema.optionalKey(Base64)
}).annotate({ identifier: "ProxyRequest" })
export type ProxyRequest = typeof ProxyRequest.Type

/** Upstream response headers: a repeated header (e.g. `set-cookie`) is an array. */
export const ProxyHeaders = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)]))

/**
 * `_proxy` answer (outer status 200 for any upstream answer): the body is `bodyJson` when the
 * upstream said JSON and it parses, else `bodyRaw` (base64); neither for an empty body.
 */
export const ProxyResponse = Schema.Struct({
  statusCode: Schema.Number,
  headers: ProxyHeaders,
  bodyJson: Schema.optionalKey(Schema.Json),
  bodyRaw: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ProxyResponse" })
export type ProxyResponse = typeof ProxyResponse.Type

/** A problem with one `X-Svc-Label` header. */
export interface LabelHeaderProblem {
  readonly field: string
  readonly message: string
}

/** Parses repeated `X-Svc-Label: key=value` values into user labels, or the problems. */
export const parseLabelHeaders = (
  values: ReadonlyArray<string>
): { readonly labels: Record<string, string> } | { readonly problems: ReadonlyArray<LabelHeaderProblem> } => {
  const labels: Record<string, string> = {}
  const problems: Array<LabelHeaderProblem> = []
  for (const raw of values) {
    for (const part of raw.split(",")) {
      const entry = part.trim()
      if (entry === "") continue
      const eq = entry.indexOf("=")
      const field = `header.${labelHeader}`
      if (eq <= 0) {
        problems.push({ field, message: "a label header is key=value" })
        continue
      }
      const key = entry.slice(0, eq).trim()
      const value = entry.slice(eq + 1).trim()
      const problem = keyProblem(key) ?? labelValueProblem(value)
      if (problem !== undefined) problems.push({ field: `${field}.${key}`, message: problem })
      else labels[key] = value
    }
  }
  return problems.length === 0 ? { labels } : { problems }
}

/** The actor side of a snapshot (spec 2.5 item 2). */
export interface SnapshotActor {
  readonly id: string
  readonly name: string
  readonly namespace: string
  readonly labels: Labels
}

/** A request label naming a key the connection already labels with another value (SECURITY.md). */
export class LabelConflict {
  readonly key: string
  constructor(key: string) {
    this.key = key
  }
}

/**
 * The resource side of a snapshot (spec 2.5 items 1 and 2): the connection's labels (with their
 * carried-forward labels), the actor's user labels as `svc/act/<key>` with
 * `svc/act/-/id|name|ns` (no other `svc/` entry of the actor).
 */
export const resourceLabelSnapshot = (
  connectionLabels: Labels,
  actor: SnapshotActor | undefined
): Record<string, string> => {
  const out: Record<string, string> = { ...connectionLabels }
  if (actor !== undefined) {
    const labels = actor.labels
    for (const key in labels) {
      if (Object.hasOwn(labels, key) && !isSystemKey(key)) out[`${systemPrefix}act/${key}`] = labels[key] as string
    }
    out[`${systemPrefix}act/-/id`] = actor.id
    out[`${systemPrefix}act/-/name`] = actor.name
    out[`${systemPrefix}act/-/ns`] = actor.namespace
  }
  return out
}

/**
 * The frozen label snapshot of one proxied request (spec 2.5): the resource's labels
 * (`resourceLabelSnapshot`), then the request's user labels. The resource wins: a request label
 * repeating a resource label's value is kept, one with another value is a `LabelConflict`, so a
 * caller cannot relabel what an operator's rule selects on (SECURITY.md "Trust boundaries").
 */
export const labelSnapshot = (
  connectionLabels: Labels,
  actor: SnapshotActor | undefined,
  requestLabels: Labels | undefined
): Record<string, string> | LabelConflict => {
  const out = resourceLabelSnapshot(connectionLabels, actor)
  if (requestLabels !== undefined) {
    // for…in, not Object.entries: no pair arrays per proxied request (issue 31, allocation)
    for (const key in requestLabels) {
      if (!Object.hasOwn(requestLabels, key) || isSystemKey(key)) continue
      const value = requestLabels[key] as string
      if (Object.hasOwn(out, key)) {
        if (out[key] !== value) return new LabelConflict(key)
      } else out[key] = value
    }
  }
  return out
}
