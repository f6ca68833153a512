/**
 * The `~/.svc.yaml` configuration file (spec 4.8): schema, location and loading.
 */
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import type { FileSystem } from "effect"
import * as NodePath from "node:path"
import { parse as parseYaml } from "yaml"
import { CliFailure } from "./CliFailure.ts"
import { fileExists, readText } from "./Files.ts"
import { formatSchemaError } from "./SchemaIssues.ts"

const Url = Schema.String.check(Schema.makeFilter((value) => URL.canParse(value) || "Expected an absolute URL"))

/** Keys of the configuration file (spec 4.8); any other key is rejected. */
export const SvcConfig = Schema.Struct({
  admin_username: Schema.optionalKey(Schema.NonEmptyString),
  admin_private_key_path: Schema.optionalKey(Schema.NonEmptyString),
  admin_shared_key_path: Schema.optionalKey(Schema.NonEmptyString),
  server: Schema.optionalKey(
    Schema.Struct({
      api: Schema.optionalKey(Url),
      admin_api: Schema.optionalKey(Url),
      auth: Schema.optionalKey(Url),
      marketplace: Schema.optionalKey(Url),
      admin_ui: Schema.optionalKey(Url)
    })
  ),
  signing_proxy: Schema.optionalKey(
    Schema.Struct({
      port: Schema.optionalKey(
        Schema.Struct({
          env_var: Schema.optionalKey(Schema.NonEmptyString),
          default: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 65535 })))
        })
      )
    })
  )
})
export type SvcConfig = typeof SvcConfig.Type

/**
 * Where the process's home and working directories are; provided by `main.ts` (the only reader of
 * `os.homedir()` and `process.cwd()`). The working directory is where an embedded svc keeps `.svc/`.
 */
export class ConfigLocation extends Context.Service<
  ConfigLocation,
  {
    readonly homeDir: string
    readonly workDir: string
  }
>()("@svc/cli/CliConfig/ConfigLocation") {
  static readonly layer = (homeDir: string, workDir: string = homeDir) =>
    Layer.succeed(ConfigLocation, ConfigLocation.of({ homeDir, workDir }))
}

/** The development key an embedded svc writes, relative to its working directory (docs/configuration.md). */
export const devKeyRelativePath = NodePath.join(".svc", "dev-keys", "jwt-private.pem")

/**
 * A decoded configuration with key paths made absolute; `source` is the file read, if any;
 * `devKeyPath` is the embedded default's development key when it exists in the working
 * directory, the key of last resort when neither a flag nor the file names one.
 */
export interface LoadedConfig {
  readonly source: string | undefined
  readonly config: SvcConfig
  readonly devKeyPath?: string | undefined
}

const decode = Schema.decodeUnknownResult(SvcConfig)

/** Decodes configuration file text; unknown or wrong-typed keys fail naming the key. */
export const parseConfigText = (text: string, source: string): Result.Result<SvcConfig, CliFailure> => {
  const invalid = (detail: string) =>
    Result.fail(new CliFailure({ message: `invalid config file "${source}":\n  ${detail.split("\n").join("\n  ")}` }))
  let document: unknown
  try {
    document = parseYaml(text)
  } catch (error) {
    return invalid(error instanceof Error ? error.message : String(error))
  }
  if (document === null || document === undefined) return Result.succeed({})
  return Result.mapError(
    decode(document, { onExcessProperty: "error", errors: "all" }),
    (error) => new CliFailure({ message: `invalid config file "${source}":\n  ${formatSchemaError(error, "\n  ")}` })
  )
}

/** Expands a leading `~/` and resolves a relative path against `baseDir`. */
export const resolvePath = (path: string, baseDir: string, homeDir: string): string =>
  path === "~"
    ? homeDir
    : path.startsWith("~/")
      ? NodePath.join(homeDir, path.slice(2))
      : NodePath.resolve(baseDir, path)

const resolveKeyPaths = (config: SvcConfig, baseDir: string, homeDir: string): SvcConfig => ({
  ...config,
  ...(config.admin_private_key_path === undefined
    ? {}
    : {
        admin_private_key_path: resolvePath(config.admin_private_key_path, baseDir, homeDir)
      }),
  ...(config.admin_shared_key_path === undefined
    ? {}
    : {
        admin_shared_key_path: resolvePath(config.admin_shared_key_path, baseDir, homeDir)
      })
})

/**
 * Loads `--config <path>` (must exist) or `~/.svc.yaml` (absent means empty). Key paths in the
 * file are resolved against the file's directory, `~/` against the home directory. Notes the
 * development key of an embedded svc in the working directory (`./.svc/dev-keys/`).
 */
export const loadCliConfig = Effect.fn("CliConfig.load")(function* (
  explicit: Option.Option<string>
): Effect.fn.Return<LoadedConfig, CliFailure, FileSystem.FileSystem | ConfigLocation> {
  const { homeDir, workDir } = yield* ConfigLocation
  const devKey = NodePath.resolve(workDir, devKeyRelativePath)
  const dev = (yield* fileExists(devKey)) ? { devKeyPath: devKey } : {}
  const path = Option.match(explicit, {
    onNone: () => NodePath.join(homeDir, ".svc.yaml"),
    onSome: (path) => resolvePath(path, ".", homeDir)
  })
  if (Option.isNone(explicit) && !(yield* fileExists(path))) {
    return { source: undefined, config: {}, ...dev }
  }
  const text = yield* readText(path, "config file")
  const config = yield* Effect.fromResult(parseConfigText(text, path))
  return { source: path, config: resolveKeyPaths(config, NodePath.dirname(path), homeDir), ...dev }
})
