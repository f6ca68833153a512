/**
 * Re-authentication of a `configured` (or `disabled`) connection for every auth method (spec 2.11,
 * 4.3 rule 4): when its stored configuration lacks a preconnect value its version now requires,
 * `_reauthorize` answers that preconnect form and `POST _setup` takes it (validated against the
 * step's JSON Schema, stored encrypted with compare-and-swap), then the auth method goes on: an
 * OAuth2 authorization-code connection gets the provider redirect, the others run their verify
 * probes with the new values and become healthy with the re-authentication notice resolved. The
 * connection stays in its state and keeps proxying with its current credentials throughout.
 * Everything else is `ConnectionSetup`'s.
 */
import type { Connection } from "@svc/domain/Connection"
import type { SetupProgress, SubmitSetupStep } from "@svc/domain/ConnectionSetup"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Conflict, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ConnectionId } from "@svc/domain/Ids"
import { reauthKey } from "@svc/domain/Notification"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { checkReturnUrl } from "../auth/ReturnUrls.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { ConnectionSetup, type SetupError } from "./ConnectionSetup.ts"
import { TokenRefresher } from "./TokenRefresher.ts"
import { requiredScopes } from "./MigrationPlan.ts"
import { formNext, isAuthorizationCode, type PlannedStep, setupPlan, stepById } from "./SetupSteps.ts"
import { VerifyProbes } from "./VerifyProbes.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { Notifications } from "../resources/Notifications.ts"
import * as Present from "../resources/Presenters.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { checkMigratedConfiguration, redactConfiguration, validateStepValues } from "../resources/SetupConfiguration.ts"

type FormStep = Extract<PlannedStep, { readonly kind: "form" }>

/** The first preconnect step whose required values `configuration` lacks (spec 3.1), if any. */
export const missingPreconnect = (
  definition: ConnectorDefinition,
  configuration: Readonly<Record<string, unknown>>
): FormStep | undefined => {
  const stepId = checkMigratedConfiguration(definition, configuration, () => false).preconnectStepId
  const step = stepId === null ? undefined : stepById(setupPlan(definition), stepId)
  return step?.kind === "form" ? step : undefined
}

/** Whether the connection holds every OAuth2 scope its version requires (unknown grants count as held). */
const scopesGranted = (row: ConnectionRow, definition: ConnectorDefinition): boolean => {
  const granted = row.grantedScopes
  return granted === undefined || granted === null || requiredScopes(definition).every((s) => granted.includes(s))
}

const live = (row: ConnectionRow): boolean => row.state === "configured" || row.state === "disabled"

const isClientCredentials = (definition: ConnectorDefinition): boolean =>
  definition.auth.type === "oauth2" && definition.auth.grant_type === "client_credentials"

/** `_reauthorize` and `POST _setup` for every auth method; connections in setup go to `ConnectionSetup`. */
export class ConnectionReauth extends Context.Service<
  ConnectionReauth,
  {
    readonly reauthorize: (
      actor: AuthenticatedActor,
      id: ConnectionId,
      returnToUrl: string | undefined
    ) => Effect.Effect<SetupProgress, SetupError>
    readonly submit: (
      actor: AuthenticatedActor,
      id: ConnectionId,
      body: SubmitSetupStep
    ) => Effect.Effect<SetupProgress, SetupError>
  }
>()("@svc/server/ConnectionReauth") {
  static readonly layerNoDeps: Layer.Layer<
    ConnectionReauth,
    never,
    | ResourceOps
    | ConnectionRepo
    | ConnectorDefinitions
    | ConnectionSecrets
    | ConnectionSetup
    | Notifications
    | ConnectionChanges
    | VerifyProbes
    | TokenRefresher
    | SvcConfig
  > = Layer.effect(
    ConnectionReauth,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const repo = yield* ConnectionRepo
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const setup = yield* ConnectionSetup
      const notifications = yield* Notifications
      const changes = yield* ConnectionChanges
      const verify = yield* VerifyProbes
      const refresher = yield* TokenRefresher
      const config = yield* SvcConfig
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const present = (
        row: ConnectionRow,
        definition: ConnectorDefinition,
        configuration: Readonly<Record<string, unknown>>
      ): Connection => Present.connection(row, redactConfiguration(definition, configuration))

      const reload = (id: ConnectionId) =>
        Effect.flatMap(ops.find(Kinds.connections, id), (found) =>
          Option.isSome(found)
            ? Effect.succeed(found.value)
            : Effect.fail(new NotFound({ error: `connection ${id} not found`, code: "not_found" }))
        )

      /** Health back and the re-authentication notice resolved, as a completed OAuth2 re-authorization does. */
      const heal = (row: ConnectionRow, definition: ConnectorDefinition) =>
        Effect.gen(function* () {
          yield* Effect.orDie(repo.setHealth(row.id, "healthy", yield* now, "reauthorized"))
          yield* notifications.clear(row.id, reauthKey)
          yield* changes.written([row.id])
          const current = yield* reload(row.id)
          const configuration = yield* secrets.configuration(current)
          return { connection: present(current, definition, configuration), next: { type: "complete" } } as const
        })

      const reauthorize = Effect.fn("ConnectionReauth.reauthorize")(function* (
        actor: AuthenticatedActor,
        id: ConnectionId,
        returnToUrl: string | undefined
      ) {
        const row = yield* ops.load(actor, Kinds.connections, id, "update")
        if (!live(row)) return yield* setup.reauthorize(actor, id, returnToUrl)
        const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
        const configuration = yield* secrets.configuration(row)
        // spec 4.3 rule 4: a newly required preconnect value is asked for before anything else.
        const missing = missingPreconnect(definition, configuration)
        if (missing !== undefined) {
          if (isAuthorizationCode(definition) && returnToUrl !== undefined) {
            // The redirect comes after the forms: it returns where this call asked.
            yield* checkReturnUrl(returnToUrl, "body.returnToUrl", config)
            yield* Effect.orDie(repo.setReturnUrl(row.id, returnToUrl, yield* now))
          }
          return { connection: present(row, definition, configuration), next: formNext(missing) } as const
        }
        if (isClientCredentials(definition) && !scopesGranted(row, definition)) {
          // A client-credentials connection re-authenticates by asking for a token with its
          // version's scopes: the grant fails unless every required scope is granted (an answer
          // without `scope` grants what was asked, RFC 6749 5.1).
          const fetched = yield* refresher.refreshNow(row.id, { force: true, retryRemembered: true })
          if (fetched !== "refreshed") {
            return yield* new Conflict({
              error: `the token endpoint gave connection ${id} no token with the scopes version ${row.connectorVersion} requires; the connection keeps its current token`,
              code: "reauthorization_failed"
            })
          }
          const current = yield* reload(row.id)
          yield* verify.run(current, definition)
          return yield* heal(current, definition)
        }
        const pending =
          !isAuthorizationCode(definition) &&
          scopesGranted(row, definition) &&
          (yield* notifications.migrationReauthPending(row.id))
        if (!pending) return yield* setup.reauthorize(actor, id, returnToUrl)
        // The preconnect values arrived another way (a later migration): the verify probes decide.
        yield* verify.run(row, definition)
        return yield* heal(row, definition)
      })

      const submit = Effect.fn("ConnectionReauth.submit")(function* (
        actor: AuthenticatedActor,
        id: ConnectionId,
        body: SubmitSetupStep
      ) {
        const row = yield* ops.load(actor, Kinds.connections, id, "update")
        if (!live(row)) return yield* setup.submit(actor, id, body)
        const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
        const configuration = yield* secrets.configuration(row)
        const step = missingPreconnect(definition, configuration)
        if (step === undefined || step.id !== body.stepId) {
          return yield* new Conflict({
            error:
              step === undefined
                ? `connection ${id} is not in setup; fetch POST /api/v1/connections/${id}/_reauthorize`
                : `connection ${id} asks for preconnect step ${step.id}; fetch POST /api/v1/connections/${id}/_reauthorize`,
            code: "setup_step_mismatch"
          })
        }
        const values = yield* validateStepValues(definition, step.id, body.values)
        const merged = { ...configuration, ...values }
        const configurationEnc = yield* secrets.sealConfiguration(row, merged)
        const next = missingPreconnect(definition, merged)
        // The verify probes vouch for the new values before they are stored; the old ones keep serving.
        if (next === undefined && !isAuthorizationCode(definition)) {
          yield* verify.run({ ...row, configurationEnc }, definition)
        }
        const swapped = yield* Effect.orDie(
          repo.swapConfiguration(row.id, row.configurationEnc, configurationEnc, yield* now)
        )
        if (!swapped) {
          return yield* new Conflict({
            error: `connection ${id} changed meanwhile; fetch POST /api/v1/connections/${id}/_reauthorize`,
            code: "concurrent_change"
          })
        }
        yield* changes.written([row.id])
        const current = yield* reload(row.id)
        if (next !== undefined) {
          return { connection: present(current, definition, merged), next: formNext(next) } as const
        }
        if (isAuthorizationCode(definition)) {
          const redirect = yield* setup.reauthRedirect(current, actor, current.setupReturnUrl ?? undefined)
          return { connection: present(current, definition, merged), next: redirect } as const
        }
        // A missing OAuth2 scope is not granted by a form: the notice stays until new credentials.
        if (!scopesGranted(current, definition)) {
          return { connection: present(current, definition, merged), next: { type: "complete" } } as const
        }
        return yield* heal(current, definition)
      })

      return ConnectionReauth.of({ reauthorize, submit })
    })
  )
}
