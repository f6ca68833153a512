import { Predicate } from "effect"
import type { OpenApi } from "effect/http-api"
import {
  convertSchema,
  type Json,
  orderKeys,
  rewriteRefsDeep,
  type SchemaContext,
  type Source,
  type Swagger2Schema,
  VALIDATION_KEYWORDS
} from "./Swagger2Schema.ts"

/** A Swagger 2.0 document as produced by {@link toSwagger2}: plain JSON with a stable key order. */
export interface Swagger2Document {
  [key: string]: Json
  swagger: "2.0"
  info: { [key: string]: Json; title: string; version: string }
  paths: { [path: string]: { [method: string]: Json } }
  definitions: { [name: string]: Swagger2Schema }
}

/** Where the described service is reached; Swagger 2.0 paths are relative to `basePath`. */
export interface Swagger2Options {
  readonly host?: string | undefined
  readonly basePath?: string | undefined
  readonly schemes?: ReadonlyArray<"http" | "https" | "ws" | "wss"> | undefined
  readonly title?: string | undefined
}

type Out = { [key: string]: Json }

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch"] as const
const FORM_TYPES = ["application/x-www-form-urlencoded", "multipart/form-data"]
const PARAMETER_KEYS = [
  "name",
  "in",
  "description",
  "required",
  "schema",
  "type",
  "format",
  "items",
  "collectionFormat",
  "default",
  ...VALIDATION_KEYWORDS,
  "enum",
  "multipleOf"
]
const ITEM_KEYS = new Set(
  PARAMETER_KEYS.filter((k) => !["name", "in", "description", "required", "schema"].includes(k))
)
const OPERATION_KEYS = [
  "tags",
  "summary",
  "description",
  "externalDocs",
  "operationId",
  "consumes",
  "produces",
  "parameters",
  "responses",
  "deprecated",
  "security"
]
const DOCUMENT_KEYS = [
  "swagger",
  "info",
  "host",
  "basePath",
  "schemes",
  "consumes",
  "produces",
  "paths",
  "definitions",
  "securityDefinitions",
  "security",
  "tags",
  "externalDocs"
]

const sortedRecord = <V extends Json>(record: { readonly [key: string]: V }): { [key: string]: V } => {
  const out: { [key: string]: V } = {}
  for (const key of Object.keys(record).sort()) out[key] = record[key]!
  return out
}

/** Follows `$ref`s (and single-`allOf` wrappers) into the definitions so a non-body parameter can be inlined. */
const deref = (schema: Swagger2Schema, definitions: Source, depth = 0): Swagger2Schema => {
  if (depth > 16) return schema
  const { $ref, allOf, ...rest } = schema
  if (typeof $ref === "string") {
    const target = definitions[$ref.replace(/^#\/definitions\//, "")]
    return Predicate.isObject(target) ? deref({ ...(target as Swagger2Schema), ...rest }, definitions, depth + 1) : rest
  }
  if (Array.isArray(allOf) && allOf.length === 1 && Predicate.isObject(allOf[0])) {
    return { ...deref(allOf[0] as Swagger2Schema, definitions, depth + 1), ...rest }
  }
  return schema
}

/** Swagger 2.0 non-body parameters, items and headers carry a primitive `type`, never a schema. */
const flatten = (schema: Swagger2Schema, definitions: Source, location: string): Out => {
  const s = deref(schema, definitions)
  const out: Out = {}
  for (const [key, value] of Object.entries(s)) {
    if (ITEM_KEYS.has(key) || key.startsWith("x-")) out[key] = value
  }
  if (typeof out.type !== "string" || out.type === "object") out.type = "string"
  if (out.type === "array") {
    out.items = Predicate.isObject(s.items)
      ? flatten(s.items as Swagger2Schema, definitions, location)
      : { type: "string" }
    out.collectionFormat = location === "query" ? "multi" : "csv"
  } else {
    delete out.items
    delete out.collectionFormat
  }
  return orderKeys(out, PARAMETER_KEYS)
}

const convertParameter = (p: OpenApi.OpenAPISpecParameter, ctx: Ctx): Out | undefined => {
  if (p.in === "cookie") return undefined // Swagger 2.0 has no cookie parameters
  const schema = convertSchema(p.schema, ctx)
  const flat = flatten(schema, ctx.converted, p.in)
  const described = deref(schema, ctx.converted).description
  const description = p.description ?? (typeof described === "string" ? described : undefined)
  const out: Out = { ...flat, name: p.name, in: p.in, required: p.in === "path" ? true : p.required }
  if (description !== undefined) out.description = description
  return orderKeys(out, PARAMETER_KEYS)
}

interface Ctx extends SchemaContext {
  readonly definitions: Source
  readonly converted: { [name: string]: Swagger2Schema }
}

const bodyParameters = (
  body: OpenApi.OpenAPISpecRequestBody,
  ctx: Ctx
): { consumes: Array<string>; params: Array<Out> } => {
  const consumes = Object.keys(body.content)
  const json = consumes.find((c) => c === "application/json" || c.endsWith("+json"))
  const chosen = json ?? consumes.find((c) => !FORM_TYPES.includes(c)) ?? consumes[0]
  if (chosen === undefined) return { consumes, params: [] }
  const schema = convertSchema(body.content[chosen]!.schema, ctx)
  if (!FORM_TYPES.includes(chosen)) {
    return { consumes, params: [{ name: "body", in: "body", required: true, schema }] }
  }
  const object = deref(schema, ctx.converted)
  const required = Array.isArray(object.required) ? object.required : []
  const properties = Predicate.isObject(object.properties) ? Object.entries(object.properties) : []
  const params = properties.map(([name, p]) => {
    const flat = flatten(p as Swagger2Schema, ctx.converted, "formData")
    if (flat.format === "binary") {
      flat.type = "file"
      delete flat.format
    }
    return orderKeys({ ...flat, name, in: "formData", required: required.includes(name) }, PARAMETER_KEYS)
  })
  return { consumes, params }
}

const convertResponse = (response: OpenApi.OpenApiSpecResponse, ctx: Ctx, produces: Set<string>): Out => {
  const out: Out = { description: response.description }
  const content = response.content ?? {}
  const types = Object.keys(content)
  for (const t of types) produces.add(t)
  const chosen = types.find((c) => c === "application/json" || c.endsWith("+json")) ?? types[0]
  if (chosen !== undefined) out.schema = convertSchema(content[chosen]!.schema, ctx)
  if (response.headers !== undefined) {
    const headers: Out = {}
    for (const [name, h] of Object.entries(response.headers)) {
      const schema = convertSchema(h.schema, ctx)
      const header: Out = flatten(schema, ctx.converted, "header")
      const description = h.description ?? deref(schema, ctx.converted).description
      if (typeof description === "string") header.description = description
      headers[name] = orderKeys(header, ["description", ...PARAMETER_KEYS])
    }
    out.headers = sortedRecord(headers)
  }
  return out
}

const convertOperation = (
  op: OpenApi.OpenAPISpecOperation,
  pathParameters: ReadonlyArray<OpenApi.OpenAPISpecParameter>,
  ctx: Ctx
): Out => {
  const out: Out = {}
  // Every field of the operation, extensions (`x-…`) included, which its type does not list.
  const fields: ReadonlyArray<readonly [string, unknown]> = Object.entries(op)
  for (const [key, value] of fields) {
    if (key.startsWith("x-") || ["tags", "summary", "description", "externalDocs", "deprecated"].includes(key)) {
      out[key] = rewriteRefsDeep(value)
    }
  }
  if (op.operationId !== undefined) out.operationId = op.operationId
  const parameters = [...pathParameters, ...(op.parameters ?? [])].flatMap((p) => convertParameter(p, ctx) ?? [])
  if (op.requestBody !== undefined) {
    const body = bodyParameters(op.requestBody, ctx)
    if (body.consumes.length > 0) out.consumes = body.consumes
    parameters.push(...body.params)
  }
  if (parameters.length > 0) out.parameters = parameters
  const produces = new Set<string>()
  const responses: Out = {}
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    responses[status] = convertResponse(response, ctx, produces)
  }
  out.responses = responses
  if (produces.size > 0) out.produces = [...produces]
  if (op.security !== undefined && op.security.length > 0) out.security = rewriteRefsDeep(op.security)
  return orderKeys(out, OPERATION_KEYS)
}

const convertSecurityScheme = (scheme: OpenApi.OpenAPISecurityScheme): Out => {
  const note = (text: string) => (scheme.description === undefined ? text : `${scheme.description} (${text})`)
  if (scheme.type === "apiKey") {
    if (scheme.in === "cookie") {
      return { type: "apiKey", in: "header", name: "Cookie", description: note(`Cookie: ${scheme.name}=<value>`) }
    }
    const out: Out = { type: "apiKey", in: scheme.in, name: scheme.name }
    if (scheme.description !== undefined) out.description = scheme.description
    return out
  }
  if (scheme.scheme.toLowerCase() === "basic") {
    return scheme.description === undefined ? { type: "basic" } : { type: "basic", description: scheme.description }
  }
  const credential = scheme.scheme.toLowerCase() === "bearer" ? "Bearer <jwt>" : `${scheme.scheme} <credentials>`
  return { type: "apiKey", in: "header", name: "Authorization", description: note(credential) }
}

const relativePath = (path: string, basePath: string | undefined): string => {
  if (basePath === undefined || basePath === "/" || basePath === "") return path
  const base = basePath.replace(/\/$/, "")
  if (path === base) return "/"
  if (!path.startsWith(`${base}/`)) throw new Error(`Path ${path} is outside basePath ${basePath}`)
  return path.slice(base.length)
}

/**
 * Converts an OpenAPI 3.1 document made by `OpenApi.fromApi` into a valid Swagger 2.0 document
 * (spec 9.2); the output is deterministic so regenerated files are byte-identical.
 */
export const toSwagger2 = (openApi: OpenApi.OpenAPISpec, options: Swagger2Options = {}): Swagger2Document => {
  const schemas: Source = openApi.components?.schemas ?? {}
  const ctx: Ctx = { hoisted: {}, definitions: schemas, converted: {} }
  for (const [name, schema] of Object.entries(schemas)) ctx.converted[name] = convertSchema(schema, ctx)

  const paths: { [path: string]: { [method: string]: Json } } = {}
  for (const [path, item] of Object.entries(openApi.paths)) {
    const pathItem: Out = {}
    const shared = item.parameters ?? []
    for (const method of METHODS) {
      const op = item[method]
      if (op !== undefined) pathItem[method] = convertOperation(op, shared, ctx)
    }
    const additional = item["x-oai-additionalOperations"]
    if (additional !== undefined) {
      const ops: Out = {}
      for (const [method, op] of Object.entries(additional)) {
        if (op !== undefined) ops[method] = convertOperation(op, shared, ctx)
      }
      pathItem["x-oai-additionalOperations"] = ops
    }
    paths[relativePath(path, options.basePath)] = pathItem
  }

  for (const [name, schema] of Object.entries(ctx.hoisted)) {
    const existing = ctx.converted[name]
    if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`Conflicting Swagger definition: ${name}`)
    }
    ctx.converted[name] = schema
  }

  const info: Out = { title: options.title ?? openApi.info.title, version: openApi.info.version }
  const description = [openApi.info.summary, openApi.info.description].filter((d) => d !== undefined).join("\n\n")
  if (description !== "") info.description = description
  if (openApi.info.license !== undefined) info.license = rewriteRefsDeep(openApi.info.license)

  const doc: Out = { swagger: "2.0", info: orderKeys(info, ["title", "description", "version", "license"]) }
  if (options.host !== undefined) doc.host = options.host
  if (options.basePath !== undefined) doc.basePath = options.basePath
  if (options.schemes !== undefined) doc.schemes = [...options.schemes]
  doc.paths = sortedRecord(paths)
  doc.definitions = sortedRecord(ctx.converted)
  const securitySchemes = openApi.components?.securitySchemes ?? {}
  if (Object.keys(securitySchemes).length > 0) {
    const definitions: Out = {}
    for (const [name, scheme] of Object.entries(securitySchemes)) definitions[name] = convertSecurityScheme(scheme)
    doc.securityDefinitions = sortedRecord(definitions)
  }
  if (openApi.security.length > 0) doc.security = rewriteRefsDeep(openApi.security)
  if (openApi.tags.length > 0) doc.tags = rewriteRefsDeep(openApi.tags)
  return orderKeys(doc, DOCUMENT_KEYS) as Swagger2Document
}
