/**
 * How the commands reach a running svc (spec 4.8, ARCHITECTURE "packages/cli"): only through
 * `HttpApiClient` on the domain's `ApiV1` declarations, with a short-lived admin token signed by
 * the CLI itself for every request. The api URL, actor and key come from flags, else the config
 * file, else the embedded default (`./.svc/dev-keys/` in the working directory, port 8081).
 */
import { Effect, type FileSystem, Layer, Option, Result } from "effect"
import { CliError, Flag } from "effect/cli"
import { FetchHttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import type { ApiV1 } from "@svc/domain/http/Apis"
import { Authentication } from "@svc/domain/http/Security"
import { type ConfigLocation, type LoadedConfig, loadCliConfig } from "./CliConfig.ts"
import type { CliFailure } from "./CliFailure.ts"
import { signingKeyFlags } from "./Keys.ts"
import { makeRequestTokenSigner } from "./RequestToken.ts"
import { type KeyRef, resolveSigningKey } from "./SignPlan.ts"

/** The api service of the embedded default (ARCHITECTURE "Processes"). */
export const defaultApiUrl = "http://127.0.0.1:8081"

/** `--apiUrl`, `--actorId`, `--privateKeyPath`, `--secretKeyPath`: every command that calls the api. */
export const apiFlags = {
  apiUrl: Flag.String("apiUrl").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(`Base URL of the api service (default: config server.api, else ${defaultApiUrl})`),
    Flag.optional
  ),
  actorId: Flag.String("actorId").pipe(
    Flag.withMetavar("EXTERNAL_ID"),
    Flag.withDescription('Actor the request tokens are signed for (default: config admin_username, else "admin")'),
    Flag.optional
  ),
  ...signingKeyFlags
}

/** Parsed `apiFlags`. */
export interface ApiFlags {
  readonly apiUrl: Option.Option<string>
  readonly actorId: Option.Option<string>
  readonly privateKeyPath: Option.Option<string>
  readonly secretKeyPath: Option.Option<string>
}

/** Where and as whom the commands call: the api base URL, the token subject and the signing key. */
export interface ApiTarget {
  readonly apiUrl: string
  readonly subject: string
  readonly key: KeyRef
}

const isHttpUrl = (text: string): boolean => {
  if (!URL.canParse(text)) return false
  const protocol = new URL(text).protocol
  return protocol === "http:" || protocol === "https:"
}

/** Usage errors of `apiFlags` alone; empty when valid. */
export const apiFlagErrors = (flags: ApiFlags): ReadonlyArray<string> => {
  const errors: Array<string> = []
  if (Option.isSome(flags.apiUrl) && !isHttpUrl(flags.apiUrl.value)) {
    errors.push(`--apiUrl: expected an http or https URL (got "${flags.apiUrl.value}")`)
  }
  if (Option.isSome(flags.actorId) && flags.actorId.value.trim() === "") errors.push("--actorId must not be empty")
  if (Option.isSome(flags.privateKeyPath) && Option.isSome(flags.secretKeyPath)) {
    errors.push("--privateKeyPath and --secretKeyPath are mutually exclusive")
  }
  return errors
}

/** `Command.validate` for commands built on `apiFlags`. */
export const validateApiFlags = (flags: ApiFlags, more: ReadonlyArray<string> = []) => {
  const errors = [...apiFlagErrors(flags), ...more]
  return errors.length === 0 ? Effect.void : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
}

/**
 * Resolves the target (pure): a flag wins, then the config file, then the embedded default
 * (127.0.0.1:8081 and the development key in the working directory, `loaded.devKeyPath`).
 */
export const resolveApiTarget = (flags: ApiFlags, loaded: LoadedConfig): Result.Result<ApiTarget, CliFailure> => {
  const apiUrl = Option.getOrElse(flags.apiUrl, () => loaded.config.server?.api ?? defaultApiUrl).replace(/\/+$/, "")
  const subject = Option.getOrElse(flags.actorId, () => loaded.config.admin_username ?? "admin")
  return Result.map(resolveSigningKey(flags, loaded), (key) => ({ apiUrl, subject, key }))
}

/** The typed client of the api service (`ApiV1`). */
export type SvcApiClient = HttpApiClient.ForApi<typeof ApiV1>

/** A ready client and where it points. */
export interface ConnectedApi {
  readonly client: SvcApiClient
  readonly target: ApiTarget
}

/** Builds the typed client for `target`: every request carries a fresh admin token signed with `key`. */
export const makeApiClient = Effect.fn("ApiClient.make")(function* (target: ApiTarget) {
  const freshToken = yield* makeRequestTokenSigner(target.subject, target.key)
  const auth = HttpApiMiddleware.layerClient(Authentication, ({ next, request }) =>
    Effect.flatMap(freshToken, (token) => next(HttpClientRequest.bearerToken(request, token)))
  )
  // the API's declarations are loaded by the commands that call it, not by `cli --help`
  const { ApiV1 } = yield* Effect.promise(() => import("@svc/domain/http/Apis"))
  const client = yield* HttpApiClient.make(ApiV1, { baseUrl: target.apiUrl }).pipe(
    Effect.provide(Layer.merge(auth, FetchHttpClient.layer))
  )
  return { client, target } satisfies ConnectedApi
})

/** Flags plus configuration (`--config` from the root) into a ready client. */
export const connectApi = Effect.fn("ApiClient.connect")(function* (
  flags: ApiFlags,
  config: Option.Option<string>
): Effect.fn.Return<ConnectedApi, CliFailure, FileSystem.FileSystem | ConfigLocation> {
  const loaded = yield* loadCliConfig(config)
  const target = yield* Effect.fromResult(resolveApiTarget(flags, loaded))
  return yield* makeApiClient(target)
})
