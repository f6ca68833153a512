/**
 * The browser leg of the OAuth2 authorization-code grant with PKCE (RFC 6749 4.1, RFC 7636), as
 * the public service runs it:
 *
 * - `start(ticket)`: the single-use ticket of `_initiate`/`_reauthorize` becomes a fresh `state`
 *   (bound to the connection, actor, return URL, PKCE verifier and this browser through a cookie
 *   only it holds) and the provider's authorization URL;
 * - `complete(query, cookies)`: validates the state (single use, expiring, same browser),
 *   exchanges the code with the definition's client authentication, stores the tokens encrypted
 *   with compare-and-swap, records the granted scopes, advances setup (or ends a
 *   re-authentication), and sends the browser back to the stored return URL only when its origin
 *   is allowed — otherwise it shows a plain page. Nothing secret reaches a page, URL or log.
 */
import { oauth2StepId } from "@svc/domain/ConnectionSetup"
import type { OAuth2TokenSet, StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { ServiceUnavailable } from "@svc/domain/Errors"
import type { ConnectionId } from "@svc/domain/Ids"
import { reauthKey } from "@svc/domain/Notification"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { AuthorizationFlows, sha256, type StateRecord } from "./AuthorizationFlows.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { LimitedCalls, subjectOf } from "./LimitedCalls.ts"
import { oauth2LabelsOf } from "./OAuth2Labels.ts"
import { OAuthClient } from "./OAuthClient.ts"
import { endpointOptions } from "../outbound/OutboundOptions.ts"
import { dueAt } from "./UsableCredentials.ts"
import { isAllowedReturnUrl } from "../auth/ReturnUrls.ts"
import { authorizationUrl, exchangeCode } from "../oauth/AuthorizationCode.ts"
import { makePkce, randomToken } from "../oauth/Pkce.ts"
import { scopeNames } from "../oauth/TokenEndpoint.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectionSetup } from "./ConnectionSetup.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { Notifications } from "../resources/Notifications.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"

/** What the browser gets: a redirect, or a plain page with a status. */
export type BrowserOutcome =
  | { readonly _tag: "Redirect"; readonly url: string; readonly setCookies: ReadonlyArray<BrowserCookie> }
  | { readonly _tag: "Page"; readonly status: number; readonly title: string; readonly message: string }

/** A cookie binding one authorization to the browser that started it. */
export interface BrowserCookie {
  readonly name: string
  readonly value: string
  /** Seconds; 0 clears it. */
  readonly maxAge: number
  readonly path: string
}

/** The callback's query parameters this service reads. */
export interface CallbackQuery {
  readonly state?: string | undefined
  readonly code?: string | undefined
  readonly error?: string | undefined
}

/** The path of the callback route (the `redirect_uri` is the public base URL plus this). */
export const callbackPath = "/oauth2/callback"

/** The per-flow cookie name: one per state, so parallel flows in one browser do not collide. */
export const flowCookieName = (state: string): string => `svc_oauth2_${sha256(state).slice(0, 16)}`

const page = (status: number, title: string, message: string): BrowserOutcome => ({
  _tag: "Page",
  status,
  title,
  message
})

const invalidState = page(
  400,
  "Authorization link not valid",
  "This authorization is unknown, has expired or was already completed. Start connecting again from the application."
)

/** The browser leg of OAuth2 authorization. */
export class ConnectionAuthorization extends Context.Service<
  ConnectionAuthorization,
  {
    readonly start: (ticket: string | undefined) => Effect.Effect<BrowserOutcome>
    readonly complete: (
      query: CallbackQuery,
      cookies: Readonly<Record<string, string>>
    ) => Effect.Effect<BrowserOutcome>
  }
>()("@svc/server/ConnectionAuthorization") {
  static readonly layerNoDeps: Layer.Layer<
    ConnectionAuthorization,
    never,
    | AuthorizationFlows
    | ResourceOps
    | ConnectorDefinitions
    | ConnectionSecrets
    | ConnectionRepo
    | ConnectionSetup
    | ConnectionChanges
    | Notifications
    | OAuthClient
    | Outbound
    | LimitedCalls
    | SvcConfig
  > = Layer.effect(
    ConnectionAuthorization,
    Effect.gen(function* () {
      const flows = yield* AuthorizationFlows
      const ops = yield* ResourceOps
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const repo = yield* ConnectionRepo
      const setup = yield* ConnectionSetup
      const changes = yield* ConnectionChanges
      const notifications = yield* Notifications
      const clients = yield* OAuthClient
      const outbound = yield* Outbound
      const calls = yield* LimitedCalls
      const config = yield* SvcConfig
      const redirectUri = `${config.publicService.baseUrl}${callbackPath}`
      const ttlMs = config.oauth2.authorizationTimeoutMs

      const loadConnection = (id: ConnectionId) =>
        Effect.gen(function* () {
          const found = yield* ops.find(Kinds.connections, id)
          if (Option.isNone(found)) return undefined
          const definition = yield* definitions.get(found.value.connectorId, found.value.connectorVersion)
          const auth = definition.auth
          if (auth.type !== "oauth2" || auth.grant_type !== "authorization_code") return undefined
          return { row: found.value, definition, auth }
        })

      const stillWaiting = (row: ConnectionRow, record: StateRecord) =>
        record.purpose === "setup"
          ? row.state === "setup" && row.setupStepId === oauth2StepId
          : row.state === "configured" || row.state === "disabled"

      const start = Effect.fn("ConnectionAuthorization.start")(
        function* (ticket: string | undefined) {
          if (ticket === undefined || ticket === "") return invalidState
          const claimed = yield* flows.claimTicket(ticket)
          if (Option.isNone(claimed)) return invalidState
          const record = claimed.value
          const loaded = yield* loadConnection(record.connectionId)
          if (loaded === undefined) return invalidState
          const { row, auth } = loaded
          if (!stillWaiting(row, { ...record, codeVerifier: "", browserHash: "", redirectUri })) return invalidState
          const client = yield* clients.resolve(auth)
          const pkce = makePkce()
          const state = randomToken(32)
          const browser = randomToken(32)
          yield* flows.saveState(
            state,
            { ...record, codeVerifier: pkce.verifier, browserHash: sha256(browser), redirectUri },
            ttlMs
          )
          const url = authorizationUrl(auth, {
            clientId: client.client_id,
            redirectUri,
            state,
            codeChallenge: pkce.challenge
          })
          const cookie: BrowserCookie = {
            name: flowCookieName(state),
            value: browser,
            maxAge: Math.ceil(ttlMs / 1000),
            path: callbackPath
          }
          return { _tag: "Redirect", url, setCookies: [cookie] } satisfies BrowserOutcome
        },
        Effect.catchTag("OAuthClientUnavailable", (e) =>
          Effect.logError(e.message).pipe(
            Effect.as(
              page(500, "Connector not ready", "The connector's OAuth2 client is not configured on this service.")
            )
          )
        )
      )

      /** Back to the application, or a page when there is nowhere allowed to go. */
      const finish = (
        record: StateRecord,
        clear: BrowserCookie,
        outcome: { readonly error: string } | { readonly status: "configured" | "setup" }
      ): BrowserOutcome => {
        const back = record.returnToUrl
        if (back !== undefined && isAllowedReturnUrl(back, config)) {
          const url = new URL(back)
          url.searchParams.set("connection_id", record.connectionId)
          if ("error" in outcome) url.searchParams.set("error", outcome.error)
          else url.searchParams.set("status", outcome.status)
          return { _tag: "Redirect", url: url.toString(), setCookies: [clear] }
        }
        if ("error" in outcome) {
          return page(400, "Connection not completed", `The connection could not be completed (${outcome.error}).`)
        }
        return page(200, "Connected", "The connection is authorised. You can close this window.")
      }

      const storeTokens = (row: ConnectionRow, definition: ConnectorDefinition, token: OAuth2TokenSet) =>
        Effect.gen(function* () {
          const stored: StoredCredentials = { kind: "oauth2_authorization_code", token }
          const sealed = yield* secrets.sealCredentials(row, stored)
          const now = yield* Clock.currentTimeMillis
          const auth = definition.auth
          const granted = scopeNames(token.scope ?? "", auth.type === "oauth2" ? auth.scope_separator : " ")
          return yield* Effect.orDie(
            repo.swapCredentials(row.id, row.credentialsEnc, sealed, new Date(now), {
              grantedScopes: granted,
              tokenRefreshDueAt: dueAt(definition, stored, config.oauth2.defaultTokenLifetimeMs),
              healthState: "healthy"
            })
          )
        })

      const complete = Effect.fn("ConnectionAuthorization.complete")(
        function* (query: CallbackQuery, cookies: Readonly<Record<string, string>>) {
          const state = query.state
          if (state === undefined || state === "") return invalidState
          const claimed = yield* flows.claimState(state)
          if (Option.isNone(claimed)) return invalidState
          const record = claimed.value
          const cookieName = flowCookieName(state)
          const clear: BrowserCookie = { name: cookieName, value: "", maxAge: 0, path: callbackPath }
          const browser = cookies[cookieName]
          // Login CSRF: only the browser that started this authorization may complete it.
          if (browser === undefined || sha256(browser) !== record.browserHash) return invalidState
          if (query.error !== undefined) {
            const code = /^[a-z_]{1,64}$/.test(query.error) ? query.error : "authorization_failed"
            return finish(record, clear, { error: code })
          }
          if (query.code === undefined || query.code === "") return finish(record, clear, { error: "invalid_request" })
          const loaded = yield* loadConnection(record.connectionId)
          if (loaded === undefined) return finish(record, clear, { error: "connection_not_found" })
          const { row, definition, auth } = loaded
          if (!stillWaiting(row, record)) return finish(record, clear, { error: "setup_step_mismatch" })
          const client = yield* clients.resolve(auth)
          const options = endpointOptions(definition, auth.token_endpoint, config.outbound.allowPrivateNetworks)
          const exchanged = yield* exchangeCode(
            auth,
            client,
            { code: query.code, codeVerifier: record.codeVerifier, redirectUri: record.redirectUri },
            calls.send("oauth2_token_exchange", subjectOf(row), (request) => outbound.send(request, options)),
            yield* Clock.currentTimeMillis
          ).pipe(
            oauth2LabelsOf(ops, subjectOf(row)),
            Effect.withSpan("oauth2.token_exchange", {
              attributes: { "svc.connection_id": row.id, "svc.oauth2.grant_type": "authorization_code" }
            }),
            Effect.result
          )
          if (exchanged._tag === "Failure") {
            const failure = exchanged.failure
            yield* Effect.logWarning(`oauth2 code exchange for ${row.id} failed: ${failure.message}`)
            const code = failure.reason === "invalid_scope" ? "required_scope_not_granted" : "token_exchange_failed"
            return finish(record, clear, { error: code })
          }
          if (!(yield* storeTokens(row, definition, exchanged.success))) {
            return finish(record, clear, { error: "concurrent_change" })
          }
          yield* changes.written([row.id])
          yield* notifications.clear(row.id, reauthKey)
          if (record.purpose === "reauth") return finish(record, clear, { status: "configured" })
          const current = yield* ops.find(Kinds.connections, row.id)
          if (Option.isNone(current)) return finish(record, clear, { error: "connection_not_found" })
          const advanced = yield* setup.advance(current.value, definition, oauth2StepId).pipe(Effect.result)
          if (advanced._tag === "Failure") {
            const error = advanced.failure
            const code = "code" in error && typeof error.code === "string" ? error.code : "setup_failed"
            return finish(record, clear, { error: code })
          }
          return finish(record, clear, { status: advanced.success.state === "configured" ? "configured" : "setup" })
        },
        Effect.catchTag("OAuthClientUnavailable", (e) =>
          Effect.logError(e.message).pipe(
            Effect.as(
              page(500, "Connector not ready", "The connector's OAuth2 client is not configured on this service.")
            )
          )
        )
      )

      const storeDown = <E>(effect: Effect.Effect<BrowserOutcome, E>): Effect.Effect<BrowserOutcome> =>
        Effect.catch(effect, (error) =>
          error instanceof ServiceUnavailable
            ? Effect.succeed(page(503, "Try again", "The service is temporarily unavailable. Try again in a moment."))
            : Effect.die(error)
        )

      return ConnectionAuthorization.of({
        start: (ticket) => storeDown(start(ticket)),
        complete: (query, cookies) => storeDown(complete(query, cookies))
      })
    })
  )
}
