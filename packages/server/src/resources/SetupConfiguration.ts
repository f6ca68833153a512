/**
 * Connection configuration against a definition's `setup_flow` (spec 2.7, 3.1): each step's JSON
 * Schema is compiled with Ajv (draft 2020-12, strict, formats, defaults applied). Missing required
 * preconnect properties are errors; a missing required configure property is not, it names the
 * step to resume from. Messages never echo a configuration value (it may be a secret).
 */
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { BadRequest, type ErrorDetail } from "@svc/domain/Errors"
import {
  type SetupFlow,
  type SetupPhaseName,
  secretConfigurationKeys,
  setupSteps,
  stepProperties
} from "@svc/domain/SetupFlow"
import type { Ajv2020, ErrorObject, ValidateFunction } from "ajv/dist/2020.js"
import type addFormats from "ajv-formats"
import { createRequire } from "node:module"
import { prototypeKeyProblem, prototypeKeys } from "@svc/domain/StrictInput"
import { Effect, Predicate } from "effect"

/** One compiled step. */
interface CompiledStep {
  readonly phase: SetupPhaseName
  readonly id: string
  readonly keys: ReadonlyArray<string>
  readonly validate: ValidateFunction
}

// Ajv and its formats (CommonJS) are loaded by the first flow compiled, not with the server.
const require = createRequire(import.meta.url)
let ajvModules: { readonly Ajv: typeof Ajv2020; readonly formats: typeof addFormats } | undefined
const loadAjv = () =>
  (ajvModules ??= {
    Ajv: (require("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js")).Ajv2020,
    formats: require("ajv-formats") as typeof addFormats
  })

const newAjv = () => {
  const { Ajv, formats } = loadAjv()
  const ajv = new Ajv({
    strict: true,
    allowUnionTypes: true,
    allErrors: true,
    useDefaults: true,
    validateFormats: true,
    logger: false
  })
  formats.default(ajv)
  return ajv
}

type Compiled = { readonly steps: ReadonlyArray<CompiledStep> } | { readonly problems: ReadonlyArray<ErrorDetail> }

const compileFlow = (flow: SetupFlow | undefined, root: string): Compiled => {
  // One Ajv instance per flow: its schema cache lives and dies with the flow.
  const ajv = newAjv()
  const steps: Array<CompiledStep> = []
  const problems: Array<ErrorDetail> = []
  for (const { phase, index, step } of setupSteps(flow)) {
    try {
      steps.push({
        phase,
        id: step.id,
        keys: Object.keys(stepProperties(step)),
        validate: ajv.compile(step.json_schema)
      })
    } catch (error) {
      problems.push({
        field: `${root}.setup_flow.${phase}.steps[${index}].json_schema`,
        message: `invalid JSON Schema: ${error instanceof Error ? error.message : String(error)}`
      })
    }
  }
  return problems.length > 0 ? { problems } : { steps }
}

const compiledFlows = new WeakMap<object, ReadonlyArray<CompiledStep>>()

const compiledSteps = (definition: Pick<ConnectorDefinition, "setup_flow">): ReadonlyArray<CompiledStep> => {
  const flow = definition.setup_flow
  if (flow === undefined) return []
  const cached = compiledFlows.get(flow)
  if (cached !== undefined) return cached
  const compiled = compileFlow(flow, "definition")
  // A stored definition was validated when it was created: a schema that no longer compiles is a defect.
  if ("problems" in compiled) throw new Error(`setup_flow does not compile: ${compiled.problems[0]?.message}`)
  compiledFlows.set(flow, compiled.steps)
  return compiled.steps
}

/** Problems compiling every step schema of `flow`, with fields under `root` (e.g. `body.definition`). */
export const setupFlowProblems = (flow: SetupFlow | undefined, root: string): ReadonlyArray<ErrorDetail> => {
  const compiled = compileFlow(flow, root)
  if ("problems" in compiled) return compiled.problems
  // Configuration values are merged into objects under these keys (SECURITY.md).
  const problems: Array<ErrorDetail> = []
  for (const { phase, index, step } of setupSteps(flow)) {
    for (const key of Object.keys(stepProperties(step))) {
      const problem = prototypeKeyProblem(key)
      if (problem !== undefined) {
        problems.push({
          field: `${root}.setup_flow.${phase}.steps[${index}].json_schema.properties.${key}`,
          message: problem
        })
      }
    }
  }
  return problems
}

const pointerPath = (pointer: string): string =>
  pointer
    .split("/")
    .slice(1)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join("")

const stringParam = (error: ErrorObject, name: string): string | undefined => {
  const value: unknown = error.params[name]
  return typeof value === "string" ? value : undefined
}

/** The outcome of a valid configuration. */
export interface CheckedConfiguration {
  /** The configuration with schema defaults applied. */
  readonly configuration: Record<string, unknown>
  /** The first configure step with a missing required property, or `null` when setup is complete. */
  readonly setupStepId: string | null
}

/** A value the caller gave itself: never one read through the prototype, never under `__proto__` and the like. */
const owned = (values: object, key: string): boolean => Object.hasOwn(values, key) && !prototypeKeys.has(key)

const invalid = (details: ReadonlyArray<ErrorDetail>) =>
  new BadRequest({ error: "invalid configuration", code: "invalid_configuration", details })

/**
 * Validates a connection configuration: every key must be declared by a step, every value must
 * match its step's schema, required preconnect properties must be present; defaults are applied.
 */
export const validateConfiguration = Effect.fnUntraced(function* (
  definition: Pick<ConnectorDefinition, "setup_flow">,
  configuration: Readonly<Record<string, unknown>> | undefined,
  root = "body.configuration"
): Effect.fn.Return<CheckedConfiguration, BadRequest> {
  const input: unknown = configuration ?? {}
  if (!Predicate.isObject(input)) return yield* invalid([{ field: root, message: "must be an object" }])
  const steps = compiledSteps(definition)
  const details: Array<ErrorDetail> = []
  const declared = new Set(steps.flatMap((step) => step.keys))
  for (const key of Object.keys(input)) {
    const problem = prototypeKeyProblem(key) ?? (declared.has(key) ? undefined : "no setup step declares this key")
    if (problem !== undefined) details.push({ field: `${root}.${key}`, message: problem })
  }
  const out: Record<string, unknown> = {}
  let setupStepId: string | null = null
  for (const step of steps) {
    const part: Record<string, unknown> = {}
    for (const key of step.keys) if (owned(input, key)) part[key] = structuredClone(input[key])
    step.validate(part)
    for (const error of step.validate.errors ?? []) {
      const at = `${root}${pointerPath(error.instancePath)}`
      const missing = error.keyword === "required" ? stringParam(error, "missingProperty") : undefined
      if (missing === undefined) {
        const extra = error.keyword === "additionalProperties" ? stringParam(error, "additionalProperty") : undefined
        details.push(
          extra === undefined
            ? { field: at, message: error.message ?? "is invalid" }
            : { field: `${at}.${extra}`, message: "is not allowed" }
        )
      } else if (error.instancePath === "" && step.phase === "configure") {
        // spec 3.1: a missing required configure field leaves the connection in setup at this step.
        setupStepId ??= step.id
      } else {
        details.push({ field: `${at}.${missing}`, message: "is required" })
      }
    }
    Object.assign(out, part)
  }
  if (details.length > 0) return yield* invalid(details)
  return { configuration: out, setupStepId }
})

/** The configuration keys whose values are secret (`writeOnly: true` or `format: "password"`). */
export const secretKeys = (definition: Pick<ConnectorDefinition, "setup_flow">): ReadonlySet<string> =>
  secretConfigurationKeys(definition.setup_flow)

/** A copy of `configuration` with every secret value replaced by `"[redacted]"`. */
export const redactConfiguration = (
  definition: Pick<ConnectorDefinition, "setup_flow">,
  configuration: Readonly<Record<string, unknown>>
): Record<string, unknown> => {
  const secrets = secretKeys(definition)
  return Object.fromEntries(
    Object.entries(configuration).map(([key, value]) => [key, secrets.has(key) ? "[redacted]" : value])
  )
}

/**
 * Validates the values of one step (interactive setup): only that step's keys, every error
 * reported (required ones included, in either phase); answers the values with defaults applied.
 */
export const validateStepValues = Effect.fnUntraced(function* (
  definition: Pick<ConnectorDefinition, "setup_flow">,
  stepId: string,
  values: Readonly<Record<string, unknown>>,
  root = "body.values"
): Effect.fn.Return<Record<string, unknown>, BadRequest> {
  const step = compiledSteps(definition).find((candidate) => candidate.id === stepId)
  if (step === undefined) return yield* invalid([{ field: root, message: `no setup step ${stepId}` }])
  const details: Array<ErrorDetail> = []
  for (const key of Object.keys(values)) {
    const problem = prototypeKeyProblem(key) ?? (step.keys.includes(key) ? undefined : "not declared by this step")
    if (problem !== undefined) details.push({ field: `${root}.${key}`, message: problem })
  }
  const part: Record<string, unknown> = {}
  for (const key of step.keys) if (owned(values, key)) part[key] = structuredClone(values[key])
  step.validate(part)
  for (const error of step.validate.errors ?? []) {
    const at = `${root}${pointerPath(error.instancePath)}`
    const missing = error.keyword === "required" ? stringParam(error, "missingProperty") : undefined
    details.push(
      missing === undefined
        ? { field: at, message: error.message ?? "is invalid" }
        : { field: `${at}.${missing}`, message: "is required" }
    )
  }
  if (details.length > 0) return yield* invalid(details)
  return part
})

/** A configuration after a version migration's hooks, checked against the target version (spec 4.3 rule 4). */
export interface MigratedConfiguration {
  /** The configuration with the defaults of `fillDefaults` keys applied. */
  readonly configuration: Record<string, unknown>
  /** The first configure step with a missing required property, or `null`. */
  readonly setupStepId: string | null
  /** The first preconnect step with a missing required property, or `null`. */
  readonly preconnectStepId: string | null
  /** Every other problem (undeclared keys, invalid values); empty when the configuration fits. */
  readonly details: ReadonlyArray<ErrorDetail>
}

/**
 * Checks a migrated configuration against `definition`: undeclared keys and invalid values are
 * problems; missing required properties name their step (preconnect or configure); JSON Schema
 * defaults are applied only to missing keys `fillDefaults` accepts (the target-only fields).
 * Messages never echo a value.
 */
export const checkMigratedConfiguration = (
  definition: Pick<ConnectorDefinition, "setup_flow">,
  input: Readonly<Record<string, unknown>>,
  fillDefaults: (key: string) => boolean,
  root = "configuration"
): MigratedConfiguration => {
  const steps = compiledSteps(definition)
  const details: Array<ErrorDetail> = []
  const declared = new Set(steps.flatMap((step) => step.keys))
  for (const key of Object.keys(input)) {
    if (!declared.has(key))
      details.push({ field: `${root}.${key}`, message: "no setup step of the target declares this key" })
  }
  const out: Record<string, unknown> = {}
  let setupStepId: string | null = null
  let preconnectStepId: string | null = null
  for (const step of steps) {
    const part: Record<string, unknown> = {}
    for (const key of step.keys) if (owned(input, key)) part[key] = structuredClone(input[key])
    step.validate(part)
    // Ajv filled every missing key that has a default: keep only those the caller allows.
    for (const key of step.keys) if (!owned(input, key) && owned(part, key) && !fillDefaults(key)) delete part[key]
    for (const error of step.validate.errors ?? []) {
      const at = `${root}${pointerPath(error.instancePath)}`
      const missing = error.keyword === "required" ? stringParam(error, "missingProperty") : undefined
      if (missing !== undefined && error.instancePath === "") {
        if (step.phase === "configure") setupStepId ??= step.id
        else preconnectStepId ??= step.id
      } else if (missing !== undefined) {
        details.push({ field: `${at}.${missing}`, message: "is required" })
      } else {
        const extra = error.keyword === "additionalProperties" ? stringParam(error, "additionalProperty") : undefined
        details.push(
          extra === undefined
            ? { field: at, message: error.message ?? "is invalid" }
            : { field: `${at}.${extra}`, message: "is not allowed" }
        )
      }
    }
    Object.assign(out, part)
  }
  return { configuration: out, setupStepId, preconnectStepId, details }
}
