/**
 * Where a replacement OAuth2 token comes from (spec 8.3): the refresh_token grant for an
 * authorization-code connection (its client from `OAuthClient`), the client credentials grant again
 * for a client-credentials connection. One provider call through `Outbound` under the endpoint's
 * policy, bounded in time; failures carry their spec 8.3 reason and a text without secrets, and
 * count in the spec 8.3 metrics.
 */
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Effect } from "effect"
import { fetchClientCredentialsToken } from "../oauth/ClientCredentials.ts"
import { recordRefresh } from "../oauth/OAuth2Telemetry.ts"
import { hasRefreshToken, type RefreshFailureReason, refreshTokenSet } from "../oauth/Refresh.ts"
import { failureMetricReason, type TokenRequestFailed } from "../oauth/TokenRequestFailed.ts"
import type { Outbound, OutboundRequest, SendOptions } from "../outbound/Outbound.ts"
import type { OAuthClient } from "./OAuthClient.ts"
import { endpointOptions } from "../outbound/OutboundOptions.ts"
import type { CallSubject, LimitedCalls } from "./LimitedCalls.ts"
import type { OAuth2Credentials } from "./UsableCredentials.ts"

/** A refresh that did not produce a token: the metric reason and a secret-free description. */
export interface TokenFailure {
  readonly reason: RefreshFailureReason
  readonly detail: string
}

/** Failures that need the user to authorise the connection again (spec 2.11 reauth notice). */
export const reauthReasons: ReadonlySet<RefreshFailureReason> = new Set([
  "invalid_grant",
  "no_refresh_token",
  "provider_rejected"
])

/** After these the token will not come back by retrying: the sweep stops until re-authentication. */
export const deadReasons: ReadonlySet<RefreshFailureReason> = new Set(["invalid_grant", "no_refresh_token"])

/** Counts one refresh attempt, and its failure reason when it failed (spec 8.3; `recordRefresh`). */
export const countRefresh = (result: "success" | "failure", reason?: RefreshFailureReason): Effect.Effect<void> =>
  recordRefresh(result, reason)

/** What `makeTokenSource` needs. */
export interface TokenSourceDeps {
  readonly outbound: Outbound["Service"]
  /** The calls' way through the rate-limit rules and request events; absent, they are neither (tests). */
  readonly calls?: LimitedCalls["Service"] | undefined
  readonly clients: OAuthClient["Service"]
  readonly allowPrivateNetworks: boolean
  /** Upper bound of one provider call (connect, first byte and total). */
  readonly maxCallMs: number
}

const internal = (detail: string): TokenFailure => ({ reason: "internal_error", detail })

const fromRequest = (failure: TokenRequestFailed): TokenFailure => ({
  reason: failureMetricReason(failure),
  detail: failure.message
})

/** The endpoint options of `endpoint`, every timeout capped at `maxMs`. */
const capped = (options: SendOptions, maxMs: number): SendOptions => ({
  ...options,
  timeouts: {
    connectMs: Math.min(options.timeouts.connectMs, maxMs),
    firstByteMs: Math.min(options.timeouts.firstByteMs, maxMs),
    totalMs: Math.min(options.timeouts.totalMs, maxMs)
  }
})

/** The token source over one outbound client. */
export const makeTokenSource = (deps: TokenSourceDeps) => ({
  /** Replacement credentials for `current` under `definition`, obtained at `now` (epoch ms). */
  obtain: (
    definition: ConnectorDefinition,
    current: OAuth2Credentials,
    now: number,
    subject: CallSubject
  ): Effect.Effect<OAuth2Credentials, TokenFailure> => {
    const auth = definition.auth
    if (auth.type !== "oauth2") return Effect.fail(internal("the connector no longer uses OAuth2"))
    const options = capped(endpointOptions(definition, auth.token_endpoint, deps.allowPrivateNetworks), deps.maxCallMs)
    const direct = (request: OutboundRequest) => deps.outbound.send(request, options)
    const send =
      deps.calls === undefined
        ? direct
        : deps.calls.send(
            current.kind === "oauth2_client_credentials" ? "oauth2_client_credentials" : "oauth2_refresh",
            subject,
            direct
          )
    if (current.kind === "oauth2_client_credentials") {
      if (auth.grant_type !== "client_credentials") {
        return Effect.fail(internal("the connector no longer uses the client credentials grant"))
      }
      const client = {
        client_id: current.client_id,
        ...(current.client_secret === undefined ? {} : { client_secret: current.client_secret })
      }
      return fetchClientCredentialsToken(auth, client, send, now).pipe(
        Effect.map((token): OAuth2Credentials => ({ ...current, token })),
        Effect.mapError(fromRequest)
      )
    }
    if (auth.grant_type !== "authorization_code") {
      return Effect.fail(internal("the connector no longer uses the authorization code grant"))
    }
    const token = current.token
    if (!auth.refresh.enabled || !hasRefreshToken(token)) {
      // Counted by the refresher as a failed attempt (`no_refresh_token`), like any failure.
      return Effect.fail({
        reason: "no_refresh_token",
        detail: auth.refresh.enabled ? "the provider issued no refresh token" : "refresh is disabled for this connector"
      } satisfies TokenFailure)
    }
    return deps.clients.resolve(auth).pipe(
      Effect.mapError((error): TokenFailure => internal(error.message)),
      Effect.flatMap((client) => Effect.mapError(refreshTokenSet(auth, client, token, send, now), fromRequest)),
      Effect.map((next): OAuth2Credentials => ({ kind: "oauth2_authorization_code", token: next }))
    )
  }
})

/** The operations `makeTokenSource` returns. */
export type TokenSource = ReturnType<typeof makeTokenSource>
