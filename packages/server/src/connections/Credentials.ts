/**
 * Credentials of server-side connections (API-CONVENTIONS "Resources"): what each auth method
 * accepts and the first OAuth2 client-credentials token fetch (keeping tokens fresh is
 * `TokenRefresher`'s). Inputs are validated without ever echoing a value; provider failures say
 * what went wrong, never a secret.
 */
import {
  ApiKeyCredentials,
  BasicCredentials,
  ClientCredentialsInput,
  type StoredCredentials
} from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { BadGateway, BadRequest, GatewayTimeout, issueDetails, ServiceUnavailable } from "@svc/domain/Errors"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { fetchClientCredentialsToken, type TokenRequestFailed } from "../oauth/ClientCredentials.ts"
import { countTokenExchange } from "../oauth/OAuth2Telemetry.ts"
import { Outbound, type OutboundRequest } from "../outbound/Outbound.ts"
import { placementProblem } from "../outbound/CredentialInjection.ts"
import { endpointOptions } from "../outbound/OutboundOptions.ts"
import { type CallSubject, LimitedCalls } from "./LimitedCalls.ts"

/** Errors of accepting credentials. */
export type CredentialsError = BadRequest | BadGateway | ServiceUnavailable | GatewayTimeout

const decodeWith =
  <A>(schema: Schema.Codec<A, unknown>, root: string) =>
  (input: unknown) =>
    Schema.decodeUnknownEffect(schema)(input, { errors: "all", onExcessProperty: "error" }).pipe(
      Effect.mapError(
        (error) =>
          new BadRequest({
            error: "the credentials are not valid for this connector's auth method",
            code: "invalid_credentials",
            details: issueDetails(error.issue, root)
          })
      )
    )

const required = (root: string, what: string) =>
  new BadRequest({
    error: `this connector's auth method needs credentials (${what})`,
    code: "credentials_required",
    details: [{ field: root, message: `required: ${what}` }]
  })

/** `stored` when the definition can place it (CredentialInjection), else 400 naming `field`. */
const placeable = (definition: ConnectorDefinition, stored: StoredCredentials, field: string) => {
  const problem = placementProblem(definition.auth, stored)
  return problem === undefined
    ? Effect.succeed(stored)
    : Effect.fail(
        new BadRequest({
          error: "the credentials cannot be placed where this connector's auth method puts them",
          code: "invalid_credentials",
          details: [{ field, message: problem }]
        })
      )
}

const tokenFailure = (failure: TokenRequestFailed): CredentialsError => {
  switch (failure.reason) {
    case "network_error":
      return new BadGateway({ error: failure.message, code: "token_endpoint_unreachable" })
    case "timeout":
      return new GatewayTimeout({ error: failure.message, code: "token_endpoint_timeout" })
    case "provider_5xx":
    case "malformed_response":
      return new BadGateway({ error: failure.message, code: "token_endpoint_failed" })
    case "rate_limited":
      return new ServiceUnavailable({ error: failure.message, code: "token_request_rate_limited" })
    default:
      return new BadRequest({ error: failure.message, code: "token_request_rejected" })
  }
}

/** Accepting connection credentials. */
export class Credentials extends Context.Service<
  Credentials,
  {
    /**
     * Validates `input` for the definition's auth method and returns what is stored; a
     * client-credentials connection fetches its first token here, for `subject` (rate-limit rules
     * of type `oauth2_client_credentials`, its request event).
     */
    readonly accept: (
      definition: ConnectorDefinition,
      input: unknown,
      root: string,
      subject: CallSubject
    ) => Effect.Effect<StoredCredentials | undefined, CredentialsError>
  }
>()("@svc/server/Credentials") {
  static readonly layerNoDeps: Layer.Layer<Credentials, never, Outbound | SvcConfig> = Layer.effect(
    Credentials,
    Effect.gen(function* () {
      const outbound = yield* Outbound
      const config = yield* SvcConfig
      // Absent (tests), the call is neither checked against rules nor recorded.
      const calls = Option.getOrUndefined(yield* Effect.serviceOption(LimitedCalls))
      const allowPrivate = config.outbound.allowPrivateNetworks

      const clientCredentials = (
        definition: ConnectorDefinition,
        input: { readonly client_id: string; readonly client_secret?: string },
        subject: CallSubject
      ) => {
        const auth = definition.auth
        if (auth.type !== "oauth2" || auth.grant_type !== "client_credentials") {
          return Effect.die(new Error("client credentials requested for another auth method"))
        }
        const options = endpointOptions(definition, auth.token_endpoint, allowPrivate)
        return Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const direct = (request: OutboundRequest) => outbound.send(request, options)
          const token = yield* fetchClientCredentialsToken(
            auth,
            input,
            calls === undefined ? direct : calls.send("oauth2_client_credentials", subject, direct),
            now
          ).pipe(Effect.mapError(tokenFailure))
          const stored: StoredCredentials = {
            kind: "oauth2_client_credentials",
            client_id: input.client_id,
            ...(input.client_secret === undefined ? {} : { client_secret: input.client_secret }),
            token
          }
          return stored
        }).pipe(
          // The first token of a client-credentials connection is its token exchange (spec 8.3),
          // counted with the labels the caller provides (`oauth2LabelsOf`).
          countTokenExchange,
          Effect.withSpan("oauth2.token_exchange", { attributes: { "svc.oauth2.grant_type": "client_credentials" } })
        )
      }

      const accept = Effect.fn("Credentials.accept")(function* (
        definition: ConnectorDefinition,
        input: unknown,
        root: string,
        subject: CallSubject
      ) {
        const auth = definition.auth
        switch (auth.type) {
          case "none": {
            if (input === undefined) return undefined
            return yield* new BadRequest({
              error: "a connector with auth method none takes no credentials",
              code: "credentials_not_accepted",
              details: [{ field: root, message: "not accepted for auth method none" }]
            })
          }
          case "api_key": {
            if (input === undefined) return yield* required(root, "api_key")
            const value = yield* decodeWith(ApiKeyCredentials, root)(input)
            return yield* placeable(definition, { kind: "api_key", api_key: value.api_key }, `${root}.api_key`)
          }
          case "basic": {
            if (input === undefined) return yield* required(root, "username and password")
            const value = yield* decodeWith(BasicCredentials, root)(input)
            return { kind: "basic", username: value.username, password: value.password } satisfies StoredCredentials
          }
          case "oauth2": {
            if (auth.grant_type === "authorization_code") {
              return yield* new BadRequest({
                error:
                  "this connector uses the OAuth2 authorization code flow: create its connections with POST /api/v1/connections/_initiate",
                code: "interactive_auth_required"
              })
            }
            if (input === undefined) return yield* required(root, "client_id and client_secret")
            const value = yield* decodeWith(ClientCredentialsInput, root)(input)
            if (value.client_secret === undefined && auth.client_auth !== "none") {
              return yield* new BadRequest({
                error: `client_secret is required with client_auth ${auth.client_auth}`,
                code: "invalid_credentials",
                details: [{ field: `${root}.client_secret`, message: "required" }]
              })
            }
            return yield* clientCredentials(definition, value, subject)
          }
        }
      })

      return Credentials.of({ accept })
    })
  )
}
