import { Context } from "effect"
import { HttpApi, type HttpApiGroup, OpenApi } from "effect/http-api"
import { readFile, mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { type Swagger2Document, type Swagger2Options, toSwagger2 } from "./Swagger2.ts"

/** The committed form of a document: two-space JSON with a trailing newline (byte-stable). */
export const renderDocument = (doc: unknown): string => `${JSON.stringify(doc, null, 2)}\n`

/** The committed file name of a named document, e.g. `api` → `api.swagger.json`. */
export const documentFileName = (name: string): string => `${name}.swagger.json`

/** The Swagger 2.0 document of an HttpApi (spec 9.2). */
export const swaggerDocument = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  options: Swagger2Options = {}
): Swagger2Document => toSwagger2(OpenApi.fromApi(api), options)

/** Writes every document into `dir`; returns the paths written. */
export const writeDocuments = async (
  docs: { readonly [name: string]: unknown },
  dir: string
): Promise<ReadonlyArray<string>> => {
  await mkdir(dir, { recursive: true })
  const written: Array<string> = []
  for (const [name, doc] of Object.entries(docs)) {
    const file = join(dir, documentFileName(name))
    await writeFile(file, renderDocument(doc))
    written.push(file)
  }
  return written
}

/** One message per committed file in `dir` that is missing or differs from a fresh generation. */
export const staleDocuments = async (
  docs: { readonly [name: string]: unknown },
  dir: string
): Promise<ReadonlyArray<string>> => {
  const stale: Array<string> = []
  for (const [name, doc] of Object.entries(docs)) {
    const file = join(dir, documentFileName(name))
    const committed = await readFile(file, "utf8").catch(() => undefined)
    if (committed === undefined) stale.push(`${file} is missing; run \`npm run swagger\``)
    else if (committed !== renderDocument(doc)) stale.push(`${file} is stale; run \`npm run swagger\``)
  }
  return stale
}

/** The Swagger 2.0 form of an HttpApi path: `/a/:id` → `/a/{id}`. */
export const swaggerPath = (path: string): string => path.replace(/:([^/?]+)\??/g, "{$1}")

/**
 * Every endpoint of `api` (other than those annotated `OpenApi.Exclude`) that has no operation with
 * its method and path in `doc`, as `METHOD /path`.
 */
export const missingEndpoints = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  doc: Swagger2Document
): ReadonlyArray<string> => {
  const missing: Array<string> = []
  const base = typeof doc.basePath === "string" ? doc.basePath.replace(/\/$/, "") : ""
  const documented = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths)) {
    const full = base !== "" && path === "/" ? base : `${base}${path}`
    for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${full}`)
  }
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, mergedAnnotations }) => {
      if (Context.get(mergedAnnotations, OpenApi.Exclude)) return
      const key = `${endpoint.method.toUpperCase()} ${swaggerPath(endpoint.path)}`
      if (!documented.has(key)) missing.push(key)
    }
  })
  return missing
}
