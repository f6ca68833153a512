/**
 * Interactive setup of connections (spec 2.7, 3.1, 4.1): `_initiate` creates a connection in state
 * `setup` and answers its first step; `_setup` shows where a connection stands and submits the
 * values of a form step; the OAuth2 step is completed by the public service's callback
 * (`ConnectionAuthorization`); after the last step the verify probes run and the connection
 * becomes `configured`. `_reauthorize` starts the OAuth2 step again for a connection whose tokens
 * stopped working (`ConnectionReauth` first asks for newly required preconnect values). Every step change is a compare-and-swap on `setup_step_id`, so two browsers
 * submitting the same step cannot both advance it.
 */
import type { Connection } from "@svc/domain/Connection"
import {
  type InitiateConnection,
  oauth2StepId,
  type SetupNext,
  type SetupProgress,
  type SubmitSetupStep,
  verifyStepId
} from "@svc/domain/ConnectionSetup"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { BadRequest, Conflict, NotFound, type ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { type ConnectionId, makeId } from "@svc/domain/Ids"
import { setupKey } from "@svc/domain/Notification"
import { namespaceFilterMatches } from "@svc/domain/Resource"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Clock, Context, DateTime, Effect, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { AuthorizationFlows, type FlowPurpose } from "./AuthorizationFlows.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { type CredentialsError, Credentials } from "./Credentials.ts"
import { subjectOf } from "./LimitedCalls.ts"
import { chooseNamespace } from "./InitiateNamespace.ts"
import { OAuthClient } from "./OAuthClient.ts"
import {
  answeredSteps,
  formNext,
  isAuthorizationCode,
  type PlannedStep,
  setupPlan,
  stepAfter,
  stepById,
  stepMismatch
} from "./SetupSteps.ts"
import { checkReturnUrl } from "../auth/ReturnUrls.ts"
import { randomToken } from "../oauth/Pkce.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { Notifications } from "../resources/Notifications.ts"
import * as Present from "../resources/Presenters.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "../resources/ResourceOps.ts"
import { oauth2LabelsOf } from "./OAuth2Labels.ts"
import { redactConfiguration, validateConfiguration, validateStepValues } from "../resources/SetupConfiguration.ts"
import { VerifyProbes } from "./VerifyProbes.ts"

/** Errors of setup operations. */
export type SetupError = ResourceError | CredentialsError | ServiceUnavailable

/** Interactive setup operations. */
export class ConnectionSetup extends Context.Service<
  ConnectionSetup,
  {
    readonly initiate: (actor: AuthenticatedActor, body: InitiateConnection) => Effect.Effect<SetupProgress, SetupError>
    readonly progress: (actor: AuthenticatedActor, id: ConnectionId) => Effect.Effect<SetupProgress, SetupError>
    readonly submit: (
      actor: AuthenticatedActor,
      id: ConnectionId,
      body: SubmitSetupStep
    ) => Effect.Effect<SetupProgress, SetupError>
    readonly reauthorize: (
      actor: AuthenticatedActor,
      id: ConnectionId,
      returnToUrl: string | undefined
    ) => Effect.Effect<SetupProgress, SetupError>
    /** A fresh redirect URL that re-authorises a configured connection at the OAuth2 provider. */
    readonly reauthRedirect: (
      row: ConnectionRow,
      actor: { readonly id: string },
      returnToUrl: string | undefined
    ) => Effect.Effect<SetupNext, ServiceUnavailable>
    /**
     * Moves a connection on from `fromStep` (the OAuth2 callback's entry point): to the next form,
     * or through the verify probes to `configured`. Answers the row as stored afterwards.
     */
    readonly advance: (
      row: ConnectionRow,
      definition: ConnectorDefinition,
      fromStep: string
    ) => Effect.Effect<ConnectionRow, SetupError>
  }
>()("@svc/server/ConnectionSetup") {
  static readonly layerNoDeps: Layer.Layer<
    ConnectionSetup,
    never,
    | ResourceOps
    | ConnectionRepo
    | ConnectorDefinitions
    | ConnectionSecrets
    | Credentials
    | AuthorizationFlows
    | Notifications
    | ConnectionChanges
    | VerifyProbes
    | OAuthClient
    | SvcConfig
  > = Layer.effect(
    ConnectionSetup,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const repo = yield* ConnectionRepo
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const credentials = yield* Credentials
      const flows = yield* AuthorizationFlows
      const notifications = yield* Notifications
      const changes = yield* ConnectionChanges
      const verify = yield* VerifyProbes
      const clients = yield* OAuthClient
      const config = yield* SvcConfig
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const present = (row: ConnectionRow, definition: ConnectorDefinition) =>
        Effect.map(
          secrets.configuration(row),
          (configuration): Connection => Present.connection(row, redactConfiguration(definition, configuration))
        )

      const reload = (id: ConnectionId) =>
        Effect.flatMap(ops.find(Kinds.connections, id), (found) =>
          Option.isSome(found)
            ? Effect.succeed(found.value)
            : Effect.fail(new NotFound({ error: `connection ${id} not found`, code: "not_found" }))
        )

      /** A fresh single-use redirect URL of the OAuth2 step. */
      const redirectNext = (
        row: ConnectionRow,
        actor: { readonly id: string },
        purpose: FlowPurpose,
        returnToUrl: string | undefined
      ) =>
        Effect.gen(function* () {
          const ticket = randomToken(32)
          const ttl = config.oauth2.authorizationTimeoutMs
          yield* flows.saveTicket(
            ticket,
            {
              connectionId: row.id,
              actorId: actor.id,
              purpose,
              ...(returnToUrl === undefined ? {} : { returnToUrl })
            },
            ttl
          )
          const expiresAt = DateTime.formatIso(DateTime.makeUnsafe((yield* Clock.currentTimeMillis) + ttl))
          const url = `${config.publicService.baseUrl}/oauth2/authorize?ticket=${encodeURIComponent(ticket)}`
          return { type: "redirect", stepId: oauth2StepId, url, expiresAt } satisfies SetupNext
        })

      const describe = (
        row: ConnectionRow,
        step: PlannedStep | undefined,
        actor: { readonly id: string }
      ): Effect.Effect<SetupNext, ServiceUnavailable> => {
        if (step === undefined || row.state !== "setup") return Effect.succeed({ type: "complete" })
        if (step.kind === "oauth2") return redirectNext(row, actor, "setup", row.setupReturnUrl ?? undefined)
        return Effect.succeed(formNext(step))
      }

      const progressOf = (row: ConnectionRow, definition: ConnectorDefinition, actor: { readonly id: string }) =>
        Effect.gen(function* () {
          const plan = setupPlan(definition)
          const step = row.setupStepId === null ? undefined : stepById(plan, row.setupStepId)
          const next = yield* describe(row, step, actor)
          const connection = yield* present(row, definition)
          if (step?.kind !== "verify" || row.state !== "setup") return { connection, next } satisfies SetupProgress
          // At svc:verify an earlier form may be edited: which ones, with their non-secret values.
          const answered = answeredSteps(plan, yield* secrets.configuration(row), yield* secrets.credentials(row))
          return { connection, next, answered } satisfies SetupProgress
        })

      /** Writes the move from `from` to `to` (undefined: configured); the verify step runs its probes. */
      const moveTo = (
        row: ConnectionRow,
        definition: ConnectorDefinition,
        from: string | null,
        to: PlannedStep | undefined,
        configurationEnc?: string
      ): Effect.Effect<ConnectionRow, SetupError> =>
        Effect.gen(function* () {
          const target =
            to === undefined
              ? { setupStepId: null, state: "configured" as const }
              : { setupStepId: to.id, state: "setup" as const }
          const moved = yield* Effect.orDie(
            repo.advanceSetup(row.id, from, { ...target, configurationEnc }, yield* now)
          )
          if (!moved) return yield* stepMismatch(row.id, row.setupStepId, from ?? "(none)")
          yield* changes.written([row.id])
          const current = yield* reload(row.id)
          if (to === undefined) {
            yield* notifications.clear(row.id, setupKey)
            return current
          }
          if (to.kind !== "verify") return current
          yield* verify.run(current, definition)
          return yield* moveTo(current, definition, verifyStepId, undefined)
        })

      const advance = (row: ConnectionRow, definition: ConnectorDefinition, fromStep: string) =>
        moveTo(row, definition, fromStep, stepAfter(setupPlan(definition), fromStep))

      const primaryDefinition = (connectorId: string, actor: AuthenticatedActor) =>
        Effect.gen(function* () {
          const found = yield* ops.find(Kinds.connectors, connectorId)
          const unknown = new NotFound({ error: `connector ${connectorId} not found`, code: "not_found" })
          if (Option.isNone(found)) return yield* unknown
          const connector = found.value
          if (!ops.allowed(actor, Kinds.connectors, "get", connector.namespace, connector.id)) {
            // A connector the caller cannot see stays invisible unless the caller may create connections of it.
            const choice = chooseNamespace(actor, connector.namespace)
            if (choice._tag !== "Chosen") return yield* unknown
          }
          const primary = yield* definitions.primary(connector.id)
          return { connector, version: primary.version, definition: primary.definition }
        })

      const initiate = Effect.fn("ConnectionSetup.initiate")(function* (
        actor: AuthenticatedActor,
        body: InitiateConnection
      ) {
        const { connector, version, definition } = yield* primaryDefinition(body.connectorId, actor)
        let namespace = body.intoNamespace
        if (namespace === undefined) {
          const choice = chooseNamespace(actor, connector.namespace)
          if (choice._tag !== "Chosen") {
            return yield* new BadRequest({
              error:
                choice.reason === "none"
                  ? `you may not create connections of connector ${connector.id}; pass intoNamespace`
                  : `the namespace cannot be chosen for you (${choice.reason === "wildcard" ? "wildcard permissions" : "several candidate namespaces"}); pass intoNamespace`,
              code: "into_namespace_required",
              details: [{ field: "body.intoNamespace", message: "required here" }]
            })
          }
          namespace = choice.namespace
        } else if (!namespaceFilterMatches({ path: connector.namespace, subtree: true }, namespace)) {
          return yield* new BadRequest({
            error: `a connection of connector ${connector.id} must be in ${connector.namespace} or below`,
            code: "namespace_outside_connector",
            details: [{ field: "body.intoNamespace", message: `must be ${connector.namespace} or below` }]
          })
        }
        yield* ops.authorizeCreate(actor, Kinds.connections, namespace)
        yield* checkReturnUrl(body.returnToUrl, "body.returnToUrl", config)
        const auth = definition.auth
        if (auth.type === "oauth2" && auth.grant_type === "authorization_code") {
          // Refuse before creating anything when the provider cannot be reached as a client.
          yield* clients.resolve(auth).pipe(
            Effect.mapError(
              (e) =>
                new BadRequest({
                  error: `connector ${connector.id} cannot start an OAuth2 authorization: ${e.message}`,
                  code: "oauth2_client_not_configured"
                })
            )
          )
        }
        // Defaults of every step apply from the start; required values are asked for by the steps.
        const plan = setupPlan(definition)
        const first = stepAfter(plan, null)
        const identity = { id: makeId("cxn"), namespace }
        const defaults = yield* validateConfiguration(definition, {}, "body.configuration").pipe(
          Effect.map((checked) => checked.configuration),
          Effect.catch(() => Effect.succeed({}))
        )
        const configurationEnc = yield* secrets.sealConfiguration(identity, defaults)
        const created = yield* ops.create(actor, Kinds.connections, {
          id: identity.id,
          namespace,
          name: body.name,
          labels: undefined,
          annotations: undefined,
          columns: {
            connectorId: connector.id,
            connectorVersion: version,
            state: "setup",
            healthState: "healthy",
            setupStepId: first?.id ?? verifyStepId,
            configurationEnc,
            credentialsEnc: null,
            setupReturnUrl: body.returnToUrl ?? null
          }
        })
        // No step at all (auth none, no setup flow, no verify probe): configured at once.
        const row = first === undefined ? yield* moveTo(created, definition, verifyStepId, undefined) : created
        return yield* progressOf(row, definition, actor)
      })

      const loadInSetup = (actor: AuthenticatedActor, id: ConnectionId, verb: string) =>
        Effect.gen(function* () {
          const row = yield* ops.load(actor, Kinds.connections, id, verb)
          const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
          return { row, definition }
        })

      const submit = Effect.fn("ConnectionSetup.submit")(function* (
        actor: AuthenticatedActor,
        id: ConnectionId,
        body: SubmitSetupStep
      ) {
        const { row, definition } = yield* loadInSetup(actor, id, "update")
        const plan = setupPlan(definition)
        const step = stepById(plan, body.stepId)
        // A connection whose verification failed stands at svc:verify: an earlier form or
        // credentials step may be submitted again (edited); the verify probes then run again.
        const editing =
          row.state === "setup" &&
          row.setupStepId === verifyStepId &&
          step !== undefined &&
          (step.kind === "form" || step.kind === "credentials")
        if (row.state !== "setup" || (row.setupStepId !== body.stepId && !editing)) {
          return yield* stepMismatch(id, row.state === "setup" ? row.setupStepId : null, body.stepId)
        }
        if (step === undefined) return yield* stepMismatch(id, row.setupStepId, body.stepId)
        const from = editing ? verifyStepId : step.id
        const after = editing ? stepById(plan, verifyStepId) : stepAfter(plan, step.id)
        switch (step.kind) {
          case "oauth2":
            return yield* new Conflict({
              error: "this step is completed in the browser at the provider; use the redirect URL of GET _setup",
              code: "browser_step"
            })
          case "verify": {
            const moved = yield* moveTo(row, definition, verifyStepId, stepAfter(plan, verifyStepId))
            return yield* progressOf(moved, definition, actor)
          }
          case "credentials": {
            const stored = yield* credentials
              .accept(definition, body.values, "body.values", {
                ...subjectOf(row),
                actorId: actor.id
              })
              .pipe(oauth2LabelsOf(ops, subjectOf(row)))
            if (stored === undefined) return yield* Effect.die(new Error("accepted credentials are empty"))
            const sealed = yield* secrets.sealCredentials(row, stored)
            const swapped = yield* Effect.orDie(repo.swapCredentials(row.id, row.credentialsEnc, sealed, yield* now))
            if (!swapped) return yield* stepMismatch(id, row.setupStepId, body.stepId)
            const moved = yield* moveTo(yield* reload(id), definition, from, after)
            return yield* progressOf(moved, definition, actor)
          }
          case "form": {
            const values = yield* validateStepValues(definition, step.id, body.values)
            const merged = { ...(yield* secrets.configuration(row)), ...values }
            const configurationEnc = yield* secrets.sealConfiguration(row, merged)
            const moved = yield* moveTo(row, definition, from, after, configurationEnc)
            return yield* progressOf(moved, definition, actor)
          }
        }
      })

      const reauthorize = Effect.fn("ConnectionSetup.reauthorize")(function* (
        actor: AuthenticatedActor,
        id: ConnectionId,
        returnToUrl: string | undefined
      ) {
        const { row, definition } = yield* loadInSetup(actor, id, "update")
        if (!isAuthorizationCode(definition)) {
          return yield* new BadRequest({
            error: `connection ${id} has nothing to re-authorise: no preconnect value is missing and its auth method has no browser step; rotate its credentials with PUT /api/v1/connections/${id}/credentials`,
            code: "reauthorization_not_supported"
          })
        }
        if (row.state === "setup") return yield* progressOf(row, definition, actor)
        yield* checkReturnUrl(returnToUrl, "body.returnToUrl", config)
        const next = yield* redirectNext(row, actor, "reauth", returnToUrl)
        return { connection: yield* present(row, definition), next } satisfies SetupProgress
      })

      return ConnectionSetup.of({
        initiate,
        submit,
        reauthorize,
        reauthRedirect: (row, actor, returnToUrl) => redirectNext(row, actor, "reauth", returnToUrl),
        advance,
        progress: (actor, id) =>
          Effect.flatMap(loadInSetup(actor, id, "get"), ({ row, definition }) => progressOf(row, definition, actor))
      })
    })
  )
}
