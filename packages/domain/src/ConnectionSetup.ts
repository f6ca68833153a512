/**
 * Interactive connection setup (spec 2.7, 3.1, 4.1 `_initiate`): the payloads of initiating a
 * connection, submitting a setup step, re-authorising and disconnecting, and the "what next"
 * answer that tells a client whether to show a form, send the browser to a provider, or stop.
 *
 * A connection in state `setup` walks its steps in order: the definition's `preconnect` steps,
 * then the auth step (`svc:oauth2` for the authorization-code grant, `svc:credentials` for
 * methods whose credentials a user types), then the `configure` steps, then the verify probes.
 * `setupStepId` names the step it stands at. The service's own step ids contain `:`, which a
 * definition's step ids (`a-z 0-9 _ -`) cannot, so they never collide.
 */
import { Schema } from "effect"
import { Connection } from "./Connection.ts"
import { NamespacePath } from "./PermissionMatcher.ts"
import { ResourceName } from "./Resource.ts"

/** The step id of the OAuth2 authorization-code redirect. */
export const oauth2StepId = "svc:oauth2"
/** The step id of the credentials form (api_key, basic, OAuth2 client credentials). */
export const credentialsStepId = "svc:credentials"
/** The step id of the verify probes (the last step before `configured`). */
export const verifyStepId = "svc:verify"

/** An absolute http(s) URL a browser may be sent back to (checked against allowed origins by the server). */
export const ReturnToUrl = Schema.String.check(
  Schema.isMaxLength(2048, { message: "must be at most 2048 characters" }),
  Schema.makeFilter(
    (value: string) => {
      let url: URL
      try {
        url = new URL(value)
      } catch {
        return "must be an absolute URL"
      }
      if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http or https URL"
      if (url.username !== "" || url.password !== "") return "must not carry credentials"
      return true
    },
    { expected: "an absolute http(s) URL" }
  )
)

/** `POST /api/v1/connections/_initiate` (spec 4.1). */
export const InitiateConnection = Schema.Struct({
  connectorId: Schema.String,
  /** Where the connection goes; when absent, chosen as spec 4.1 describes. */
  intoNamespace: Schema.optionalKey(NamespacePath),
  name: Schema.optionalKey(ResourceName),
  /** Where the browser returns after the provider; its origin must be an allowed origin. */
  returnToUrl: Schema.optionalKey(ReturnToUrl)
}).annotate({ identifier: "InitiateConnection" })
export type InitiateConnection = typeof InitiateConnection.Type

/** Which part of the setup a form step belongs to. */
export const SetupPhase = Schema.Literals(["preconnect", "credentials", "configure"])
export type SetupPhase = typeof SetupPhase.Type

/** Send the browser to `url` (the public service's OAuth2 start route). */
export const RedirectNext = Schema.Struct({
  type: Schema.Literal("redirect"),
  stepId: Schema.String,
  url: Schema.String,
  /** ISO time after which the URL no longer works. */
  expiresAt: Schema.String
}).annotate({ identifier: "SetupRedirect" })

/** Show a form: submit its values with `POST /api/v1/connections/{id}/_setup`. */
export const FormNext = Schema.Struct({
  type: Schema.Literal("form"),
  stepId: Schema.String,
  phase: SetupPhase,
  title: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String),
  json_schema: Schema.Record(Schema.String, Schema.Unknown)
}).annotate({ identifier: "SetupForm" })

/** Nothing left: the connection is `configured`. */
export const CompleteNext = Schema.Struct({ type: Schema.Literal("complete") }).annotate({
  identifier: "SetupComplete"
})

/** What the client does next. */
export const SetupNext = Schema.Union([RedirectNext, FormNext, CompleteNext]).annotate({ identifier: "SetupNext" })
export type SetupNext = typeof SetupNext.Type

/**
 * A form step already answered, which may be submitted again (edited) while the connection stands
 * at `svc:verify`: the form, and the values stored for its non-secret fields. A secret field's
 * value (`writeOnly: true` or `format: "password"`) is never included: it must be entered again.
 */
export const AnsweredStep = Schema.Struct({
  ...FormNext.fields,
  values: Schema.Record(Schema.String, Schema.Unknown)
}).annotate({ identifier: "SetupAnsweredStep" })
export type AnsweredStep = typeof AnsweredStep.Type

/** The answer of `_initiate`, `_setup` and `_reauthorize`: the connection and its next step. */
export const SetupProgress = Schema.Struct({
  connection: Connection,
  next: SetupNext,
  /** At `svc:verify` only: the form steps answered, in setup order, that may be submitted again. */
  answered: Schema.optionalKey(Schema.Array(AnsweredStep))
}).annotate({
  identifier: "SetupProgress"
})
export type SetupProgress = typeof SetupProgress.Type

/** `POST /api/v1/connections/{id}/_setup`: the values of the step the connection stands at. */
export const SubmitSetupStep = Schema.Struct({
  stepId: Schema.String,
  values: Schema.Record(Schema.String, Schema.Unknown)
}).annotate({ identifier: "SubmitSetupStep" })
export type SubmitSetupStep = typeof SubmitSetupStep.Type

/** `POST /api/v1/connections/{id}/_reauthorize`: start the OAuth2 flow again for a connection. */
export const Reauthorize = Schema.Struct({ returnToUrl: Schema.optionalKey(ReturnToUrl) }).annotate({
  identifier: "Reauthorize"
})
export type Reauthorize = typeof Reauthorize.Type

/** `POST /api/v1/connections/{id}/_disconnect`. */
export const DisconnectConnection = Schema.Struct({
  timeoutSeconds: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3600 }, { message: "must be from 1 to 3600" }))
  )
}).annotate({ identifier: "DisconnectConnection" })
export type DisconnectConnection = typeof DisconnectConnection.Type

/** Which token a revocation request named (spec 8.3 `revocation_kind`). */
export const RevocationKind = Schema.Literals(["refresh_token", "access_token"])
export type RevocationKind = typeof RevocationKind.Type

/** The outcome of one RFC 7009 revocation request made while disconnecting. */
export const RevocationOutcome = Schema.Struct({
  kind: RevocationKind,
  result: Schema.Literals(["success", "failure"]),
  /** Why it failed (`provider_5xx`, `network_error`, …); absent on success. */
  reason: Schema.optionalKey(Schema.String)
})
export type RevocationOutcome = typeof RevocationOutcome.Type
