/**
 * JSON Schema 2020-12 (OpenAPI 3.1) → Swagger 2.0 schema conversion.
 *
 * Decisions for constructs Swagger 2.0 lacks (spec 9.2):
 * - `null` alternatives (`type: [x, "null"]`, `anyOf`/`oneOf` null branch, `null` in `enum`,
 *   OpenAPI 3.0 `nullable`) become `x-nullable: true`; a nullable `$ref` becomes `allOf: [$ref]`.
 * - `const` becomes a one-value `enum`; `examples` becomes `example` (the first one).
 * - `anyOf`/`oneOf`: one remaining branch is inlined; branches that are all enums of one primitive
 *   type merge into one `enum`; Effect's encoding of non-finite numbers (a string enum of
 *   `Infinity`/`-Infinity`/`NaN` beside a number branch) is dropped, leaving the number; any other
 *   union keeps the branches' common `type` (or none) and lists the converted branches under
 *   `x-anyOf` / `x-oneOf`.
 * - `prefixItems` becomes `items` (the union of the positional and rest schemas, as above) plus
 *   `x-prefixItems`; numeric `exclusiveMinimum`/`exclusiveMaximum` become the boolean form.
 * - `$defs` are hoisted into `definitions`; every `$ref` is rewritten to `#/definitions/X`.
 * - Any other keyword Swagger 2.0 lacks is kept under an `x-` prefix.
 */
import { Predicate } from "effect"

/** A JSON value. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** A Swagger 2.0 schema object (JSON Schema draft 4 subset plus `x-` extensions). */
export interface Swagger2Schema {
  [key: string]: Json
}

/** Collects hoisted `$defs` while schemas are converted. */
export interface SchemaContext {
  readonly hoisted: Record<string, Swagger2Schema>
}

/** A JSON object being read. */
export type Source = { readonly [key: string]: unknown }

/** The numeric, string and array validation keywords Swagger 2.0 shares between schemas and parameters, in document order. */
export const VALIDATION_KEYWORDS = [
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "pattern",
  "maxItems",
  "minItems",
  "uniqueItems"
] as const

const KEY_ORDER = [
  "$ref",
  "title",
  "description",
  "type",
  "format",
  "enum",
  "default",
  "example",
  "multipleOf",
  ...VALIDATION_KEYWORDS,
  "items",
  "maxProperties",
  "minProperties",
  "required",
  "properties",
  "additionalProperties",
  "allOf",
  "discriminator",
  "readOnly",
  "xml",
  "externalDocs"
] as const

const COPIED = new Set<string>([
  "title",
  "description",
  "format",
  "default",
  "example",
  "multipleOf",
  "maxLength",
  "minLength",
  "pattern",
  "maxItems",
  "minItems",
  "uniqueItems",
  "maxProperties",
  "minProperties",
  "readOnly",
  "xml",
  "externalDocs"
])

/** Stable key order: Swagger keywords in their conventional order, then `x-` keys sorted. */
export const orderKeys = <T extends { [key: string]: Json }>(
  object: T,
  order: ReadonlyArray<string> = KEY_ORDER
): T => {
  const out: { [key: string]: Json } = {}
  for (const key of order) if (object[key] !== undefined) out[key] = object[key]
  for (const key of Object.keys(object)
    .filter((k) => !order.includes(k))
    .sort()) {
    if (object[key] !== undefined) out[key] = object[key]
  }
  return out as T
}

/** Rewrites `#/components/schemas/X` and `#/$defs/X` references to `#/definitions/X`. */
export const rewriteRef = (ref: string): string =>
  ref.replace(/^#\/components\/schemas\//, "#/definitions/").replace(/^#\/\$defs\//, "#/definitions/")

/** Deep copy of an arbitrary JSON value with every `$ref` rewritten (used for `x-` extension values). */
export const rewriteRefsDeep = (value: unknown): Json => {
  if (Array.isArray(value)) return value.map(rewriteRefsDeep)
  if (Predicate.isObject(value)) {
    const out: { [key: string]: Json } = {}
    for (const [key, v] of Object.entries(value)) {
      out[key] = key === "$ref" && typeof v === "string" ? rewriteRef(v) : rewriteRefsDeep(v)
    }
    return out
  }
  if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") {
    return null
  }
  return value as Json
}

const isNullSchema = (s: unknown): boolean =>
  Predicate.isObject(s) &&
  (s.type === "null" ||
    (Object.hasOwn(s, "const") && s.const === null) ||
    (Array.isArray(s.enum) && s.enum.length === 1 && s.enum[0] === null))

const NON_FINITE = ["Infinity", "-Infinity", "NaN"]
const isNonFiniteEncoding = (s: Swagger2Schema): boolean =>
  s.type === "string" && Array.isArray(s.enum) && s.enum.every((v) => typeof v === "string" && NON_FINITE.includes(v))

const isPlainEnum = (s: Swagger2Schema): boolean =>
  typeof s.type === "string" && Array.isArray(s.enum) && Object.keys(s).every((k) => k === "type" || k === "enum")

/** The `type` of a converted schema, following one `$ref` into the document's definitions. */
const typeOf = (s: Swagger2Schema, definitions: Source): string | undefined => {
  if (typeof s.$ref === "string") {
    const target = definitions[s.$ref.replace(/^#\/definitions\//, "")]
    return Predicate.isObject(target) && typeof target.type === "string" ? target.type : undefined
  }
  return typeof s.type === "string" ? s.type : undefined
}

/** Wraps a `$ref` so that sibling keywords are not ignored (Swagger 2.0 ignores siblings of `$ref`). */
const withSiblings = (base: Swagger2Schema, extra: Swagger2Schema): Swagger2Schema => {
  if (Object.keys(extra).length === 0) return base
  if (base.$ref !== undefined) return orderKeys({ ...extra, allOf: [base] })
  return orderKeys({ ...base, ...extra })
}

/** Converts a union's branches; `definitions` are the OpenAPI component schemas (for branch types). */
const convertUnion = (
  branches: ReadonlyArray<unknown>,
  keyword: "anyOf" | "oneOf",
  ctx: SchemaContext & { readonly definitions: Source }
): { readonly schema: Swagger2Schema; readonly nullable: boolean } => {
  const nullable = branches.some(isNullSchema)
  const seen = new Set<string>()
  let converted: Array<Swagger2Schema> = []
  for (const branch of branches) {
    if (isNullSchema(branch)) continue
    const c = convertSchema(branch, ctx)
    const key = JSON.stringify(c)
    if (!seen.has(key)) {
      seen.add(key)
      converted.push(c)
    }
  }
  const hasNumber = converted.some((c) => c.type === "number" || c.type === "integer")
  if (hasNumber) converted = converted.filter((c) => !isNonFiniteEncoding(c))
  if (converted.length === 0) return { schema: {}, nullable }
  if (converted.length === 1) return { schema: converted[0]!, nullable }
  const first = converted[0]!
  if (converted.every((c) => isPlainEnum(c) && c.type === first.type)) {
    const values: Array<Json> = []
    for (const c of converted) {
      for (const v of c.enum as ReadonlyArray<Json>) if (!values.includes(v)) values.push(v)
    }
    return { schema: { type: first.type as string, enum: values }, nullable }
  }
  const types = new Set(converted.map((c) => typeOf(c, ctx.definitions)))
  const [only] = types
  const schema: Swagger2Schema = { [`x-${keyword}`]: converted }
  if (types.size === 1 && only !== undefined) schema.type = only
  return { schema: orderKeys(schema), nullable }
}

/** Converts one JSON Schema 2020-12 / OpenAPI 3.1 schema into a Swagger 2.0 schema. */
export const convertSchema = (
  input: unknown,
  ctx: SchemaContext & { readonly definitions: Source }
): Swagger2Schema => {
  if (input === false) return { "x-jsonSchema": false }
  if (!Predicate.isObject(input)) return {}
  const s = input
  let nullable = s.nullable === true
  const out: Swagger2Schema = {}
  let base: Swagger2Schema | undefined

  if (Predicate.isObject(s.$defs)) {
    for (const [name, def] of Object.entries(s.$defs)) ctx.hoisted[name] = convertSchema(def, ctx)
  }
  if (typeof s.$ref === "string") base = { $ref: rewriteRef(s.$ref) }

  for (const keyword of ["anyOf", "oneOf"] as const) {
    const branches = s[keyword]
    if (!Array.isArray(branches)) continue
    const union = convertUnion(branches, keyword, ctx)
    nullable ||= union.nullable
    base = base === undefined ? union.schema : { allOf: [base, union.schema] }
  }

  if (Array.isArray(s.type)) {
    const types = s.type.filter((t) => t !== "null")
    nullable ||= types.length < s.type.length
    if (types.length === 1) out.type = types[0] as string
    else if (types.length > 1) out["x-type"] = types as Array<string>
  } else if (s.type === "null") {
    nullable = true
  } else if (typeof s.type === "string") {
    out.type = s.type
  }

  const enumValues: Array<unknown> | undefined = Object.hasOwn(s, "const")
    ? [s.const]
    : Array.isArray(s.enum)
      ? s.enum
      : undefined
  if (enumValues !== undefined) {
    nullable ||= enumValues.includes(null)
    const values = enumValues.filter((v) => v !== null).map(rewriteRefsDeep)
    if (values.length > 0) out.enum = values
  }
  if (Array.isArray(s.examples) && s.examples.length > 0) {
    out.example = rewriteRefsDeep(s.examples[0])
  }

  for (const [bound, exclusive] of [
    ["minimum", "exclusiveMinimum"],
    ["maximum", "exclusiveMaximum"]
  ] as const) {
    const inclusive = typeof s[bound] === "number" ? s[bound] : undefined
    const strict = typeof s[exclusive] === "number" ? s[exclusive] : undefined
    const isMin = bound === "minimum"
    if (strict !== undefined && (inclusive === undefined || (isMin ? strict >= inclusive : strict <= inclusive))) {
      out[bound] = strict
      out[exclusive] = true
    } else if (inclusive !== undefined) {
      out[bound] = inclusive
      if (s[exclusive] === true) out[exclusive] = true
    }
  }

  if (Predicate.isObject(s.properties)) {
    const properties: Swagger2Schema = {}
    for (const [name, p] of Object.entries(s.properties)) properties[name] = convertSchema(p, ctx)
    out.properties = properties
  }
  if (Array.isArray(s.required) && s.required.length > 0) out.required = s.required.map(String)
  if (typeof s.additionalProperties === "boolean") out.additionalProperties = s.additionalProperties
  else if (Predicate.isObject(s.additionalProperties))
    out.additionalProperties = convertSchema(s.additionalProperties, ctx)
  if (Predicate.isObject(s.patternProperties)) {
    const patterns = Object.values(s.patternProperties)
    if (out.additionalProperties === undefined && patterns.length === 1) {
      out.additionalProperties = convertSchema(patterns[0], ctx)
    }
    out["x-patternProperties"] = rewriteRefsDeep(s.patternProperties)
  }

  if (Array.isArray(s.prefixItems)) {
    const rest = Predicate.isObject(s.items) ? [s.items] : []
    out.items = convertUnion([...s.prefixItems, ...rest], "anyOf", ctx).schema
    out["x-prefixItems"] = s.prefixItems.map((p) => convertSchema(p, ctx))
  } else if (Predicate.isObject(s.items)) {
    out.items = convertSchema(s.items, ctx)
  } else if (Array.isArray(s.items)) {
    out.items = convertUnion(s.items, "anyOf", ctx).schema
  }
  if (Array.isArray(s.allOf)) {
    const parts = s.allOf.map((p) => convertSchema(p, ctx))
    out.allOf = base?.allOf !== undefined && Array.isArray(base.allOf) ? [...base.allOf, ...parts] : parts
    if (base?.allOf !== undefined) base = undefined
  }
  if (typeof s.discriminator === "string") out.discriminator = s.discriminator
  else if (Predicate.isObject(s.discriminator)) out["x-discriminator"] = rewriteRefsDeep(s.discriminator)

  for (const [key, value] of Object.entries(s)) {
    if (COPIED.has(key) || key.startsWith("x-")) {
      out[key] = rewriteRefsDeep(value)
    } else if (!HANDLED.has(key)) {
      out[`x-${key.replace(/^\$/, "")}`] = rewriteRefsDeep(value)
    }
  }
  if (nullable) out["x-nullable"] = true

  return base === undefined ? orderKeys(out) : withSiblings(base, out)
}

const HANDLED = new Set<string>([
  "$ref",
  "$defs",
  "anyOf",
  "oneOf",
  "type",
  "const",
  "enum",
  "examples",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "prefixItems",
  "items",
  "allOf",
  "discriminator",
  "nullable"
])
