/**
 * The connector definition's `setup_flow` (spec 2.7, 3.1): `preconnect` steps collect what is
 * needed before credentials are obtained, `configure` steps what may be completed later. Each step
 * is a JSON Schema form of `type: object`; its `properties` are configuration keys, each declared by
 * exactly one step across both phases. Compiling the schemas is the server's job (Ajv).
 */
import { Predicate, Schema } from "effect"
import { Slug } from "./ConnectorProbe.ts"

/** A configuration key: what `{{cfg.<key>}}` and hook `cfg.<key>` name. */
export const configurationKeyPattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Keywords allowed at the top of a step schema; nested property schemas may use any keyword. */
export const stepSchemaKeywords: ReadonlyArray<string> = [
  "$comment",
  "$defs",
  "type",
  "title",
  "description",
  "properties",
  "required",
  "additionalProperties"
]

/** Longest accepted step schema, as JSON text. */
export const maxStepSchemaBytes = 64 * 1024

type Problem = { readonly path: ReadonlyArray<PropertyKey>; readonly issue: string }

const stepSchemaProblems = (schema: Readonly<Record<string, unknown>>): Array<Problem> => {
  const problems: Array<Problem> = []
  if (schema.type !== "object") problems.push({ path: ["type"], issue: 'a step schema must have type: "object"' })
  for (const key of Object.keys(schema)) {
    if (!stepSchemaKeywords.includes(key)) {
      problems.push({
        path: [key],
        issue: `not allowed at the top of a step schema (allowed: ${stepSchemaKeywords.join(", ")})`
      })
    }
  }
  if ("additionalProperties" in schema && schema.additionalProperties !== false) {
    problems.push({
      path: ["additionalProperties"],
      issue: "may only be false: configuration keys are exactly the declared properties"
    })
  }
  if (!Predicate.isObject(schema.properties)) {
    problems.push({ path: ["properties"], issue: "must be an object declaring the step's configuration keys" })
  } else {
    const names = Object.keys(schema.properties)
    if (names.length > 100) problems.push({ path: ["properties"], issue: "must declare at most 100 properties" })
    for (const name of names) {
      if (!configurationKeyPattern.test(name)) {
        problems.push({
          path: ["properties", name],
          issue: "a configuration key is 1 to 63 letters, digits or '_', not starting with a digit"
        })
      }
    }
  }
  if (JSON.stringify(schema).length > maxStepSchemaBytes) {
    problems.push({ path: [], issue: `must be at most ${maxStepSchemaBytes} bytes of JSON` })
  }
  return problems
}

/** A step's form: a JSON Schema object of `type: object` (compiled by the server with Ajv). */
export const StepSchema = Schema.Record(Schema.String, Schema.Unknown).check(
  Schema.makeFilter(stepSchemaProblems, { expected: "a step JSON Schema" })
)

/** One setup step. */
export const SetupStep = Schema.Struct({
  id: Slug,
  title: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4000))),
  json_schema: StepSchema
}).annotate({ identifier: "SetupStep" })
export type SetupStep = typeof SetupStep.Type

/** One phase: an ordered list of steps. */
export const SetupPhase = Schema.Struct({
  steps: Schema.Array(SetupStep).check(
    Schema.isMinLength(1, { message: "must have at least one step; omit the phase instead" }),
    Schema.isMaxLength(50, { message: "must have at most 50 steps" })
  )
}).annotate({ identifier: "SetupFlowPhase" })
export type SetupPhase = typeof SetupPhase.Type

/** The setup phases, in the order a connection goes through them. */
export const setupPhases = ["preconnect", "configure"] as const
export type SetupPhaseName = (typeof setupPhases)[number]

/** One step with where it sits in the flow. */
export interface LocatedStep {
  readonly phase: SetupPhaseName
  readonly index: number
  readonly step: SetupStep
}

type Flow = { readonly preconnect?: SetupPhase; readonly configure?: SetupPhase }

/** Every step of a flow, preconnect first. */
export const setupSteps = (flow: Flow | undefined): ReadonlyArray<LocatedStep> =>
  setupPhases.flatMap((phase) => (flow?.[phase]?.steps ?? []).map((step, index) => ({ phase, index, step })))

/** The property schemas a step declares, by configuration key. */
export const stepProperties = (step: SetupStep): Readonly<Record<string, unknown>> => {
  const properties = step.json_schema.properties
  return Predicate.isObject(properties) ? properties : {}
}

/** A property is secret when its schema says `writeOnly: true` or `format: "password"`. */
export const isSecretProperty = (schema: unknown): boolean =>
  Predicate.isObject(schema) && (schema.writeOnly === true || schema.format === "password")

/** Every configuration key the flow declares. */
export const configurationKeys = (flow: Flow | undefined): ReadonlySet<string> =>
  new Set(setupSteps(flow).flatMap(({ step }) => Object.keys(stepProperties(step))))

/** The configuration keys whose values are secret. */
export const secretConfigurationKeys = (flow: Flow | undefined): ReadonlySet<string> =>
  new Set(
    setupSteps(flow).flatMap(({ step }) =>
      Object.entries(stepProperties(step)).flatMap(([key, schema]) => (isSecretProperty(schema) ? [key] : []))
    )
  )

const flowProblems = (flow: Flow): Array<Problem> => {
  const problems: Array<Problem> = []
  const stepIds = new Map<string, string>()
  const keys = new Map<string, string>()
  for (const { phase, index, step } of setupSteps(flow)) {
    const where = `${phase}.steps[${index}]`
    const path = [phase, "steps", index]
    const seen = stepIds.get(step.id)
    if (seen !== undefined) problems.push({ path: [...path, "id"], issue: `repeats the id of ${seen}` })
    else stepIds.set(step.id, where)
    for (const key of Object.keys(stepProperties(step))) {
      const owner = keys.get(key)
      if (owner !== undefined) {
        problems.push({
          path: [...path, "json_schema", "properties", key],
          issue: `configuration key already declared by ${owner}`
        })
      } else keys.set(key, where)
    }
  }
  return problems
}

/** `setup_flow`: step ids unique across both phases; each configuration key declared once. */
export const SetupFlow = Schema.Struct({
  preconnect: Schema.optionalKey(SetupPhase),
  configure: Schema.optionalKey(SetupPhase)
})
  .check(Schema.makeFilter(flowProblems, { expected: "a consistent setup flow" }))
  .annotate({ identifier: "SetupFlow" })
export type SetupFlow = typeof SetupFlow.Type
