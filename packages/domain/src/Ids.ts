/**
 * Prefixed resource ids (API-CONVENTIONS "Resources"): `<prefix>_<26 lowercase base32 chars>`
 * encoding 16 random bytes. Opaque after the prefix. Pure: only `globalThis.crypto`.
 */
import { Schema } from "effect"

/** The id prefixes of svc resources. */
export type IdPrefix = "act" | "cxr" | "cxn" | "key" | "rl" | "ntf" | "tsk" | "req" | "wh" | "whd" | "msg"

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"

/** The characters of one encoding, reused (one id is built per proxied request). */
const codes: Array<number> = []

/**
 * Lowercase RFC 4648 base32 without padding of `bytes[from…to)`: 16 bytes give 26 characters,
 * made as one string (no intermediate strings).
 */
const base32 = (bytes: Uint8Array, from = 0, to = bytes.length): string => {
  codes.length = 0
  let buffer = 0
  let bits = 0
  for (let i = from; i < to; i++) {
    buffer = (buffer << 8) | (bytes[i] as number)
    bits += 8
    while (bits >= 5) {
      codes.push(ALPHABET.charCodeAt((buffer >>> (bits - 5)) & 31))
      bits -= 5
    }
  }
  if (bits > 0) codes.push(ALPHABET.charCodeAt((buffer << (5 - bits)) & 31))
  return String.fromCharCode.apply(null, codes)
}

const prefixed = (prefix: IdPrefix) =>
  Schema.String.pipe(
    Schema.check(Schema.isPattern(new RegExp(`^${prefix}_[a-z2-7]{26}$`), { expected: `a ${prefix}_ id` }))
  )

/** An actor id, `act_…`. */
export const ActorId = prefixed("act").pipe(Schema.brand("ActorId"))
export type ActorId = typeof ActorId.Type
/** A connector id, `cxr_…`. */
export const ConnectorId = prefixed("cxr").pipe(Schema.brand("ConnectorId"))
export type ConnectorId = typeof ConnectorId.Type
/** True (and narrowed) when `value` is a well-formed connector id. */
export const isConnectorId: (value: unknown) => value is ConnectorId = Schema.is(ConnectorId)
/** A connection id, `cxn_…`. */
export const ConnectionId = prefixed("cxn").pipe(Schema.brand("ConnectionId"))
export type ConnectionId = typeof ConnectionId.Type
/** True (and narrowed) when `value` is a well-formed connection id. */
export const isConnectionId: (value: unknown) => value is ConnectionId = Schema.is(ConnectionId)
/** An encryption key id, `key_…`. */
export const KeyId = prefixed("key").pipe(Schema.brand("KeyId"))
export type KeyId = typeof KeyId.Type
/** A rate-limit id, `rl_…`. */
export const RateLimitId = prefixed("rl").pipe(Schema.brand("RateLimitId"))
export type RateLimitId = typeof RateLimitId.Type
/** A webhook endpoint id, `wh_…` (API-CONVENTIONS "Webhooks to the host"). */
export const WebhookId = prefixed("wh").pipe(Schema.brand("WebhookId"))
export type WebhookId = typeof WebhookId.Type
/** A webhook delivery id, `whd_…`. */
export const WebhookDeliveryId = prefixed("whd").pipe(Schema.brand("WebhookDeliveryId"))
export type WebhookDeliveryId = typeof WebhookDeliveryId.Type
/** A webhook message id, `msg_…` (the Standard Webhooks `webhook-id`, stable across retries). */
export const WebhookMessageId = prefixed("msg").pipe(Schema.brand("WebhookMessageId"))
export type WebhookMessageId = typeof WebhookMessageId.Type
/** A notification id, `ntf_…`. */
export const NotificationId = prefixed("ntf").pipe(Schema.brand("NotificationId"))
export type NotificationId = typeof NotificationId.Type
/** A request-event id, `req_…`. */
export const RequestEventId = prefixed("req").pipe(Schema.brand("RequestEventId"))
export type RequestEventId = typeof RequestEventId.Type
/**
 * A task id, `tsk_…`. Task ids may also be opaque tokens longer than a random id
 * (ARCHITECTURE "Durable work"), so any base64url text after the prefix is accepted.
 */
export const TaskId = Schema.String.pipe(
  Schema.check(Schema.isPattern(/^tsk_[A-Za-z0-9_-]+$/, { expected: "a tsk_ id" })),
  Schema.brand("TaskId")
)
export type TaskId = typeof TaskId.Type

/** The branded id type of each prefix. */
export interface IdOf {
  readonly act: ActorId
  readonly cxr: ConnectorId
  readonly cxn: ConnectionId
  readonly key: KeyId
  readonly rl: RateLimitId
  readonly ntf: NotificationId
  readonly tsk: TaskId
  readonly req: RequestEventId
  readonly wh: WebhookId
  readonly whd: WebhookDeliveryId
  readonly msg: WebhookMessageId
}

/** Builds the id of `prefix` from 16 given bytes (deterministic; for tests and replays). */
export const idFromBytes = <P extends IdPrefix>(prefix: P, bytes: Uint8Array): IdOf[P] => {
  if (bytes.length !== 16) throw new RangeError("an id needs exactly 16 bytes")
  return `${prefix}_${base32(bytes)}` as IdOf[P]
}

/** Random bytes drawn from the CSPRNG in blocks: one call per 256 ids instead of one per id. */
const pool = new Uint8Array(4096)
let poolOffset = pool.length

/** A fresh random id of `prefix`, e.g. `makeId("act")` → `act_<26 base32 chars>` (128 random bits). */
export const makeId = <P extends IdPrefix>(prefix: P): IdOf[P] => {
  if (poolOffset === pool.length) {
    globalThis.crypto.getRandomValues(pool)
    poolOffset = 0
  }
  const id = `${prefix}_${base32(pool, poolOffset, poolOffset + 16)}` as IdOf[P]
  // Each block is handed out once: the pool keeps no copy of an id's bytes after use.
  pool.fill(0, poolOffset, poolOffset + 16)
  poolOffset += 16
  return id
}
