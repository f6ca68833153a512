/**
 * The rate-limit rule form's model, without any DOM: the fields, a rule's values as form fields,
 * the checks made before sending, the definition and labels sent, and which field a server
 * `details` entry is about (RateLimitForm.test.ts).
 */
import type { RateLimit } from "@svc/domain/RateLimit"

export type Algorithm = "fixed_window" | "sliding_window" | "token_bucket"

/** The parts of a rule's definition the form edits. */
interface DefinitionShape {
  readonly mode?: "enforce" | "observe"
  readonly selector?: {
    readonly methods?: ReadonlyArray<string>
    readonly path_match?: { readonly kind: string; readonly value: string }
    readonly label_selector?: string
  }
  readonly bucket?: { readonly dimensions?: ReadonlyArray<string> }
  readonly algorithm?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
}

export const shapeOf = (rule: RateLimit): DefinitionShape => rule.definition

export interface FormState {
  readonly name: string
  readonly namespace: string
  readonly mode: "enforce" | "observe"
  readonly algorithm: Algorithm
  readonly window: string
  readonly limit: string
  readonly capacity: string
  readonly refillRate: string
  readonly methods: string
  readonly pathPrefix: string
  readonly labelSelector: string
  readonly dimensions: string
  readonly labels: string
}

export const emptyForm: FormState = {
  name: "",
  namespace: "root",
  mode: "enforce",
  algorithm: "fixed_window",
  window: "1m",
  limit: "100",
  capacity: "10",
  refillRate: "1",
  methods: "",
  pathPrefix: "",
  labelSelector: "",
  dimensions: "",
  labels: ""
}

const durationPattern = /^(?:\d+(?:\.\d+)?(?:d|h|ms|m|s))+$/
const list = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

/** The form of an existing rule. */
export const formOf = (rule: RateLimit): FormState => {
  const definition = shapeOf(rule)
  const algorithm = (Object.keys(definition.algorithm ?? {})[0] ?? "fixed_window") as Algorithm
  const params = definition.algorithm?.[algorithm] ?? {}
  return {
    name: rule.name,
    namespace: rule.namespace,
    mode: definition.mode ?? "enforce",
    algorithm,
    window: String(params.window ?? "1m"),
    limit: String(params.limit ?? ""),
    capacity: String(params.capacity ?? ""),
    refillRate: String(params.refill_rate ?? ""),
    methods: (definition.selector?.methods ?? []).join(", "),
    pathPrefix: definition.selector?.path_match?.kind === "prefix" ? definition.selector.path_match.value : "",
    labelSelector: definition.selector?.label_selector ?? "",
    dimensions: (definition.bucket?.dimensions ?? []).join(", "),
    labels: Object.entries(rule.labels)
      .filter(([key]) => !key.startsWith("svc/"))
      .map(([key, value]) => `${key}=${value}`)
      .join(", ")
  }
}

/** Client-side checks: problems by form field. */
export const check = (form: FormState): Record<string, string> => {
  const problems: Record<string, string> = {}
  if (form.namespace.trim() === "") problems.namespace = "A namespace is required."
  const positiveInteger = (text: string) => /^[1-9]\d*$/.test(text.trim())
  const positiveNumber = (text: string) => Number.isFinite(Number(text)) && Number(text) > 0
  if (form.algorithm !== "token_bucket") {
    if (!durationPattern.test(form.window.trim())) problems.window = "A duration such as 30s, 1m or 1h."
    if (!positiveInteger(form.limit)) problems.limit = "A whole number greater than 0."
  } else {
    if (!positiveInteger(form.capacity)) problems.capacity = "A whole number greater than 0."
    if (!positiveNumber(form.refillRate)) problems.refillRate = "A number greater than 0 (tokens per second)."
  }
  for (const pair of list(form.labels)) {
    if (!/^[^=]+=.*$/.test(pair)) problems.labels = "Labels are key=value pairs separated by commas."
  }
  return problems
}

export const definitionOf = (form: FormState) => {
  const methods = list(form.methods).map((m) => m.toUpperCase())
  const selector: Record<string, unknown> = {}
  if (methods.length > 0) selector.methods = methods
  if (form.pathPrefix.trim() !== "") selector.path_match = { kind: "prefix", value: form.pathPrefix.trim() }
  if (form.labelSelector.trim() !== "") selector.label_selector = form.labelSelector.trim()
  const algorithm =
    form.algorithm === "token_bucket"
      ? { token_bucket: { capacity: Number(form.capacity), refill_rate: Number(form.refillRate) } }
      : { [form.algorithm]: { window: form.window.trim(), limit: Number(form.limit) } }
  return { mode: form.mode, selector, bucket: { dimensions: list(form.dimensions) }, algorithm }
}

export const labelsOf = (form: FormState) =>
  Object.fromEntries(
    list(form.labels).map((pair) => [pair.slice(0, pair.indexOf("=")).trim(), pair.slice(pair.indexOf("=") + 1).trim()])
  )

/** Which form field a server detail (`body.definition.algorithm.fixed_window.limit`) is about. */
export const fieldOfDetail = (field: string): keyof FormState | undefined => {
  const last = field.split(".").pop() ?? ""
  const byName: Record<string, keyof FormState> = {
    namespace: "namespace",
    name: "name",
    window: "window",
    limit: "limit",
    capacity: "capacity",
    refill_rate: "refillRate",
    methods: "methods",
    path_match: "pathPrefix",
    value: "pathPrefix",
    dimensions: "dimensions",
    labels: "labels",
    label_selector: "labelSelector",
    mode: "mode"
  }
  if (field.includes("label_selector")) return "labelSelector"
  if (field.includes(".labels")) return "labels"
  if (field.includes(".dimensions")) return "dimensions"
  if (field.includes(".methods")) return "methods"
  return byName[last]
}

/** One line for the list: `fixed_window window=1m limit=100`. */
export const summary = (rule: RateLimit): string => {
  const definition = shapeOf(rule)
  const [name, params] = Object.entries(definition.algorithm ?? {})[0] ?? ["?", {}]
  return `${name} ${Object.entries(params as Record<string, unknown>)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ")}`
}
