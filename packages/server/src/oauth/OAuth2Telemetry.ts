/**
 * The OAuth2 counters of spec 8.3 around the token requests of this folder: each call counts one
 * attempt by `result`, and a failure one more by `reason` (the spec's metric reason of the
 * failure), each with the connection's labels projected through `proxy.metricDimensionLabels`
 * (`OAuth2MetricLabels`, provided by the caller that knows the connection). The spans are the
 * calls' own (`oauth2.token_exchange`, `oauth2.refresh`, `oauth2.revoke`); a failure's span
 * carries the failure's message, which never holds a token or secret (`TokenRequestFailed`).
 */
import { Context, Effect, type Exit } from "effect"
import type { Labels } from "../telemetry/LabelProjection.ts"
import { Telemetry, type TelemetryApi } from "../telemetry/Telemetry.ts"
import { failureMetricReason, TokenRequestFailed } from "./TokenRequestFailed.ts"

/**
 * The label layers the OAuth2 counters project (spec 8.3: the connector's labels, then the
 * connection's), as an effect run only when metrics are on; none by default.
 */
export const OAuth2MetricLabels = Context.Reference<Effect.Effect<ReadonlyArray<Labels>>>(
  "@svc/server/oauth/OAuth2MetricLabels",
  { defaultValue: () => Effect.succeed([]) }
)

/**
 * Counts the OAuth2 calls of `effect` with `connectorLabels` (read only when metrics are on; a
 * failure to read them counts without them) then `connectionLabels`.
 */
export const withOAuth2Labels =
  (connectorLabels: Effect.Effect<Labels>, connectionLabels: Labels) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(
      effect,
      OAuth2MetricLabels,
      Effect.map(
        Effect.catchCause(connectorLabels, () => Effect.succeed<Labels>(undefined)),
        (connector): ReadonlyArray<Labels> => [connector, connectionLabels]
      )
    )

const reasonOf = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (exit._tag === "Success") return undefined
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  return failure !== undefined && failure.error instanceof TokenRequestFailed
    ? failureMetricReason(failure.error)
    : "internal_error"
}

type Count = (telemetry: TelemetryApi, reason: string | undefined, layers: ReadonlyArray<Labels>) => void

/** Counts `effect`'s outcome with `count` (telemetry off: nothing, not even the labels read). */
export const countOAuth2 =
  (count: Count) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onExit(effect, (exit) =>
      Effect.flatMap(Telemetry, (telemetry) => {
        if (!telemetry.metering) return Effect.void
        // An interrupted call is neither a success nor a failure of the provider.
        if (exit._tag === "Failure" && exit.cause.reasons.every((r) => r._tag === "Interrupt")) return Effect.void
        return Effect.map(
          Effect.flatMap(OAuth2MetricLabels, (read) => read),
          (layers) => count(telemetry, reasonOf(exit), layers)
        )
      })
    )

/** `svc.oauth2.token_exchange.attempts.total` and `svc.oauth2.token_exchange.failures.total`. */
export const countTokenExchange = countOAuth2((t, reason, layers) => {
  t.oauth2.tokenExchangeAttempt(reason === undefined ? "success" : "failure", layers)
  if (reason !== undefined) t.oauth2.tokenExchangeFailure(reason, layers)
})

/** `svc.oauth2.revocations.total{revocation_kind, result}`. */
export const countRevocation = (kind: "refresh_token" | "access_token") =>
  countOAuth2((t, reason, layers) => t.oauth2.revocation(kind, reason === undefined ? "success" : "failure", layers))

/**
 * `svc.oauth2.refresh.attempts.total{result}` and, for a failure, `svc.oauth2.refresh.failures.total{reason}`:
 * one refresh attempt as the refresher saw it end (the refresh_token grant or a client-credentials
 * re-fetch; a refresh that cannot be tried, `no_refresh_token`, counts as a failed attempt),
 * with the labels of `OAuth2MetricLabels`. The only place a refresh is counted.
 */
export const recordRefresh = (result: "success" | "failure", reason?: string): Effect.Effect<void> =>
  Effect.flatMap(Telemetry, (telemetry) => {
    if (!telemetry.metering) return Effect.void
    return Effect.map(
      Effect.flatMap(OAuth2MetricLabels, (read) => read),
      (layers) => {
        telemetry.oauth2.refreshAttempt(result, layers)
        if (reason !== undefined) telemetry.oauth2.refreshFailure(reason, layers)
      }
    )
  })
