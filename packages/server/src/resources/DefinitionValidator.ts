/**
 * Validation of connector definition documents on create and on new versions: YAML or JSON text
 * (or an already-parsed object), at most 1 MB, decoded with every default materialised and unknown
 * keys rejected, step schemas compiled with Ajv and hook syntax checked with QuickJS (spec 2.10).
 * Every failure is a 400 `invalid_definition` whose details name the full path of each bad field.
 */
import {
  type ConnectorDefinition,
  decodeConnectorDefinition,
  maxDefinitionBytes
} from "@svc/domain/ConnectorDefinition"
import { BadRequest, type ErrorDetail, formatPath, issueDetails } from "@svc/domain/Errors"
import { Context, Effect, Layer } from "effect"
import { parseDocument } from "yaml"
import { HookSyntax } from "../hooks/HookSyntax.ts"
import { setupFlowProblems } from "./SetupConfiguration.ts"

const maxDepth = 64
const maxDetails = 100

const invalid = (details: ReadonlyArray<ErrorDetail>) =>
  new BadRequest({
    error: "invalid connector definition",
    code: "invalid_definition",
    details: details.slice(0, maxDetails)
  })

type Parsed = { readonly value: unknown } | { readonly problem: string }

const parseText = (text: string): Parsed => {
  if (new TextEncoder().encode(text).length > maxDefinitionBytes) {
    return { problem: `must be at most ${maxDefinitionBytes / 1024 / 1024} MB` }
  }
  const document = parseDocument(text, { uniqueKeys: true, strict: true, prettyErrors: true, schema: "core" })
  const [error] = document.errors
  if (error !== undefined) {
    const position = error.linePos?.[0]
    const where = position === undefined ? "" : ` (line ${position.line}, column ${position.col})`
    const message = (error.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "")
    return { problem: `not valid YAML or JSON: ${message}${where}` }
  }
  try {
    return { value: document.toJS({ maxAliasCount: 100 }) }
  } catch (error) {
    return { problem: `not valid YAML or JSON: ${error instanceof Error ? error.message : "cannot be read"}` }
  }
}

// The document must be plain JSON data: finite numbers, bounded depth (it is stored as JSONB).
const jsonProblem = (value: unknown, path: Array<PropertyKey>): ErrorDetail | undefined => {
  if (path.length > maxDepth) return { field: formatPath(path), message: `nested deeper than ${maxDepth} levels` }
  if (typeof value === "number" && !Number.isFinite(value)) {
    return { field: formatPath(path), message: "must be a finite number" }
  }
  if (typeof value !== "object" || value === null) return undefined
  const entries: Array<[PropertyKey, unknown]> = Array.isArray(value) ? [...value.entries()] : Object.entries(value)
  for (const [key, item] of entries) {
    const problem = jsonProblem(item, [...path, key])
    if (problem !== undefined) return problem
  }
  return undefined
}

const underRoot = (root: string, detail: ErrorDetail): ErrorDetail => ({
  field: detail.field === "(root)" ? root : `${root}${detail.field.startsWith("[") ? "" : "."}${detail.field}`,
  message: detail.message
})

/** Validates connector definition documents (create and new versions). */
export class DefinitionValidator extends Context.Service<
  DefinitionValidator,
  {
    /**
     * Decodes `input` (an object, or a string of YAML or JSON) into a definition with defaults
     * materialised; failures name fields under `root` (default `body.definition`).
     */
    readonly validate: (input: unknown, root?: string) => Effect.Effect<ConnectorDefinition, BadRequest>
  }
>()("@svc/server/DefinitionValidator") {
  static readonly layerNoDeps: Layer.Layer<DefinitionValidator, never, HookSyntax> = Layer.effect(
    DefinitionValidator,
    Effect.gen(function* () {
      const hooks = yield* HookSyntax
      const validate = Effect.fn("DefinitionValidator.validate")(function* (
        input: unknown,
        root = "body.definition"
      ): Effect.fn.Return<ConnectorDefinition, BadRequest> {
        const parsed = typeof input === "string" ? parseText(input) : { value: input }
        if ("problem" in parsed) return yield* invalid([{ field: root, message: parsed.problem }])
        const shape = jsonProblem(parsed.value, [])
        if (shape !== undefined) return yield* invalid([underRoot(root, shape)])
        if (typeof input !== "string" && JSON.stringify(parsed.value).length > maxDefinitionBytes) {
          return yield* invalid([{ field: root, message: `must be at most ${maxDefinitionBytes / 1024 / 1024} MB` }])
        }
        const definition = yield* decodeConnectorDefinition(parsed.value).pipe(
          Effect.mapError((error) => invalid(issueDetails(error.issue, root)))
        )
        const details = [
          ...setupFlowProblems(definition.setup_flow, root),
          ...(yield* hooks.problems(definition, root))
        ]
        if (details.length > 0) return yield* invalid(details)
        return definition
      })
      return DefinitionValidator.of({ validate })
    })
  )

  static readonly layer: Layer.Layer<DefinitionValidator> = DefinitionValidator.layerNoDeps.pipe(
    Layer.provide(HookSyntax.layer)
  )
}
