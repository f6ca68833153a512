/** Fixtures of the repository tests: fixed timestamps and the envelope columns of a resource row. */
import { type IdOf, type IdPrefix, idFromBytes } from "@svc/domain/Ids"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import { jsonb } from "./ResourceRepo.ts"

/**
 * `at(seconds)`: 2025-01-01T00:00:00Z plus `seconds` and `ms` (a sub-second offset exercises
 * timestamp precision); `envelope`: the envelope columns of a row created at `createdAt` (default
 * `at(0)`) with these user labels and no annotations.
 */
export const fixtures = (ms = 0) => {
  const at = (seconds: number): Date => new Date(Date.UTC(2025, 0, 1) + seconds * 1000 + ms)
  const envelope = (namespace: string, name: string, createdAt: Date = at(0), labels: Record<string, string> = {}) => ({
    namespace,
    name,
    labels: jsonb(labels),
    annotations: jsonb({}),
    createdAt,
    updatedAt: createdAt
  })
  return { at, envelope }
}

/**
 * A well-formed id of `prefix` named by `tag` (the tag's first 16 bytes, zero-padded), so row
 * decoding accepts it; distinct tags of up to 16 bytes give distinct ids.
 */
export const fixtureId = <P extends IdPrefix>(prefix: P, tag: string): IdOf[P] => {
  const bytes = new Uint8Array(16)
  bytes.set(new TextEncoder().encode(tag).subarray(0, 16))
  return idFromBytes(prefix, bytes)
}

/** The fixtures without a sub-second offset. */
export const { at, envelope } = fixtures()

/** A stored request event with plain defaults (GET api.example.com/v1/users, 200, upstream); `fields` override. */
export const sampleRequestEvent = (fields: Partial<RequestEvent> & { readonly id: string }): RequestEvent => ({
  timestamp: at(0).toISOString(),
  namespace: "root",
  type: "proxy",
  method: "GET",
  host: "api.example.com",
  path: "/v1/users",
  response_status_code: 200,
  response_source: "upstream",
  connector_id: "cxr_1",
  connector_version: 1,
  connection_id: "cxn_1",
  actor_id: "act_1",
  duration_ms: 5,
  labels: {},
  rate_limit_id: null,
  rate_limit_mode: null,
  rate_limit_bucket: null,
  rate_limit_matched: null,
  full_request_recorded: false,
  ...fields
})
