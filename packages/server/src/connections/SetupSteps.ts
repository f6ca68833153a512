/**
 * The order a connection walks through interactive setup (spec 2.7, 3.1): the definition's
 * `preconnect` steps, the auth step, the `configure` steps, then the verify probes. Pure: what a
 * step is and which comes next; the service stores where a connection stands in `setupStepId`.
 */
import {
  type AnsweredStep,
  credentialsStepId,
  oauth2StepId,
  type SetupNext,
  type SetupPhase,
  verifyStepId
} from "@svc/domain/ConnectionSetup"
import type { ConnectorAuth } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Conflict } from "@svc/domain/Errors"
import { isSecretProperty, type SetupStep, setupSteps } from "@svc/domain/SetupFlow"

/** `409 setup_step_mismatch`: a submit for another step than the one connection `id` stands `at`. */
export const stepMismatch = (id: string, at: string | null, given: string) =>
  new Conflict({
    error:
      at === null
        ? `connection ${id} is not in setup`
        : `connection ${id} stands at setup step ${at}, not ${given}; fetch GET /api/v1/connections/${id}/_setup`,
    code: "setup_step_mismatch"
  })

/** One step of a connection's setup. */
export type PlannedStep =
  | {
      readonly kind: "form"
      readonly id: string
      readonly phase: Exclude<SetupPhase, "credentials">
      readonly step: SetupStep
    }
  | { readonly kind: "credentials"; readonly id: typeof credentialsStepId; readonly schema: Record<string, unknown> }
  | { readonly kind: "oauth2"; readonly id: typeof oauth2StepId }
  | { readonly kind: "verify"; readonly id: typeof verifyStepId }

const secretString = (title: string) => ({ type: "string", title, minLength: 1, writeOnly: true, format: "password" })

/** The form of the credentials a user types for methods without a browser redirect; undefined for none and auth code. */
export const credentialsSchema = (auth: ConnectorAuth): Record<string, unknown> | undefined => {
  const form = (properties: Record<string, unknown>, required: ReadonlyArray<string>) => ({
    type: "object",
    properties,
    required,
    additionalProperties: false
  })
  switch (auth.type) {
    case "none":
      return undefined
    case "api_key":
      return form({ api_key: secretString("API key") }, ["api_key"])
    case "basic":
      return form(
        {
          username: { type: "string", title: "Username", maxLength: 1024, pattern: "^[^:]*$" },
          password: { ...secretString("Password"), minLength: 0 }
        },
        ["username", "password"]
      )
    case "oauth2":
      if (auth.grant_type === "authorization_code") return undefined
      return auth.client_auth === "none"
        ? form({ client_id: { type: "string", title: "Client ID", minLength: 1 } }, ["client_id"])
        : form(
            {
              client_id: { type: "string", title: "Client ID", minLength: 1 },
              client_secret: secretString("Client secret")
            },
            ["client_id", "client_secret"]
          )
  }
}

/** True when the definition uses the OAuth2 authorization-code grant (a browser redirect). */
export const isAuthorizationCode = (definition: Pick<ConnectorDefinition, "auth">): boolean =>
  definition.auth.type === "oauth2" && definition.auth.grant_type === "authorization_code"

/** Every step of the definition's setup, in order. */
export const setupPlan = (definition: ConnectorDefinition): ReadonlyArray<PlannedStep> => {
  const steps = setupSteps(definition.setup_flow)
  const form = (phase: "preconnect" | "configure"): Array<PlannedStep> =>
    steps.filter((s) => s.phase === phase).map((s) => ({ kind: "form", id: s.step.id, phase, step: s.step }))
  const auth: Array<PlannedStep> = []
  if (isAuthorizationCode(definition)) auth.push({ kind: "oauth2", id: oauth2StepId })
  else {
    const schema = credentialsSchema(definition.auth)
    if (schema !== undefined) auth.push({ kind: "credentials", id: credentialsStepId, schema })
  }
  const verify: Array<PlannedStep> = (definition.probes ?? []).some((probe) => probe.verify)
    ? [{ kind: "verify", id: verifyStepId }]
    : []
  return [...form("preconnect"), ...auth, ...form("configure"), ...verify]
}

/** The step with `id`, if the plan has one. */
export const stepById = (plan: ReadonlyArray<PlannedStep>, id: string): PlannedStep | undefined =>
  plan.find((step) => step.id === id)

/** The step after `id` (the first when `id` is null); undefined when setup is complete. */
export const stepAfter = (plan: ReadonlyArray<PlannedStep>, id: string | null): PlannedStep | undefined => {
  if (id === null) return plan[0]
  const index = plan.findIndex((step) => step.id === id)
  return index < 0 ? undefined : plan[index + 1]
}

/** What a client shows for a step that is a form: the definition's, the credentials form, or a verify retry. */
export const formNext = (step: Exclude<PlannedStep, { readonly kind: "oauth2" }>): SetupNext => {
  switch (step.kind) {
    case "form":
      return {
        type: "form",
        stepId: step.id,
        phase: step.phase,
        ...(step.step.title === undefined ? {} : { title: step.step.title }),
        ...(step.step.description === undefined ? {} : { description: step.step.description }),
        json_schema: step.step.json_schema
      }
    case "credentials":
      return { type: "form", stepId: step.id, phase: "credentials", title: "Credentials", json_schema: step.schema }
    case "verify":
      return {
        type: "form",
        stepId: step.id,
        phase: "configure",
        title: "Verify the connection",
        description: "The connection's verify probes failed; submit this step to run them again.",
        json_schema: { type: "object", properties: {}, additionalProperties: false }
      }
  }
}

/** The non-secret values of `stored` for the properties of a form's JSON Schema. */
const nonSecretValues = (
  jsonSchema: Readonly<Record<string, unknown>>,
  stored: Readonly<Record<string, unknown>>
): Record<string, unknown> => {
  const properties = jsonSchema.properties
  if (typeof properties !== "object" || properties === null) return {}
  return Object.fromEntries(
    Object.entries(properties as Record<string, unknown>)
      .filter(([name, property]) => !isSecretProperty(property) && Object.hasOwn(stored, name))
      .map(([name]) => [name, stored[name]])
  )
}

/**
 * The form steps a connection standing at `svc:verify` has answered and may submit again (its
 * preconnect, credentials and configure forms), each with the stored values of its non-secret
 * fields: the configuration for a form, the credentials for the credentials form (the username
 * or client id; never a key, password or secret).
 */
export const answeredSteps = (
  plan: ReadonlyArray<PlannedStep>,
  configuration: Readonly<Record<string, unknown>>,
  credentials: Readonly<Record<string, unknown>> | undefined
): ReadonlyArray<AnsweredStep> =>
  plan.flatMap((step): ReadonlyArray<AnsweredStep> => {
    if (step.kind === "form") {
      const form = formNext(step) as Extract<SetupNext, { readonly type: "form" }>
      return [{ ...form, values: nonSecretValues(form.json_schema, configuration) }]
    }
    if (step.kind === "credentials") {
      const form = formNext(step) as Extract<SetupNext, { readonly type: "form" }>
      return [{ ...form, values: nonSecretValues(form.json_schema, credentials ?? {}) }]
    }
    return []
  })
