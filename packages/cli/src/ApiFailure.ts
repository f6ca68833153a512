/**
 * Failures of the commands that call a running svc, each with a documented exit code
 * (packages/cli/README.md "Exit codes") and a one-line message on stderr.
 */
import { Predicate, Runtime, Schema } from "effect"
import { CliError } from "effect/cli"

/** Exit codes of `cli` (README "Exit codes"); 1 is every other failure and every usage error. */
export const ExitCode = {
  failure: 1,
  unreachable: 3,
  unauthorized: 4,
  forbidden: 5,
  notFound: 6,
  apiError: 7,
  taskFailed: 8
} as const

/** What went wrong talking to the server: decides the exit code. */
export const ApiFailureKind = Schema.Literals([
  "unreachable",
  "unauthorized",
  "forbidden",
  "notFound",
  "apiError",
  "taskFailed"
])
export type ApiFailureKind = typeof ApiFailureKind.Type

/** A failed call to the svc API: rendered as its one-line message on stderr, exit code by `kind`. */
export class ApiFailure extends Schema.TaggedError<ApiFailure>()("ApiFailure", {
  kind: ApiFailureKind,
  message: Schema.String
}) {
  override get [CliError.userMessage]() {
    return this.message
  }
  override get [Runtime.errorExitCode]() {
    return ExitCode[this.kind]
  }
}

/** The standard error body of svc (`{error, code, details?}`), as the client decodes it. */
interface ErrorBody {
  readonly _tag: string
  readonly error: string
  readonly code: string
  readonly details?: ReadonlyArray<{ readonly field: string; readonly message: string }> | undefined
}

const statusOfTag: Record<string, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  PayloadTooLarge: 413,
  InternalError: 500,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504
}

const kindOfStatus = (status: number): ApiFailureKind =>
  status === 401 ? "unauthorized" : status === 403 ? "forbidden" : status === 404 ? "notFound" : "apiError"

const isErrorBody = (error: unknown): error is ErrorBody =>
  Predicate.hasProperty(error, "_tag") &&
  Predicate.isString(error._tag) &&
  error._tag in statusOfTag &&
  Predicate.hasProperty(error, "error") &&
  Predicate.isString(error.error) &&
  Predicate.hasProperty(error, "code") &&
  Predicate.isString(error.code)

const hints: Partial<Record<ApiFailureKind, string>> = {
  unauthorized: "the server did not accept the token: is the signing key the one the server verifies with?",
  forbidden: "the actor lacks the permission"
}

/** Node's connection error code inside a fetch failure (`ECONNREFUSED`, `ENOTFOUND`, …), if any. */
const networkCode = (cause: unknown): string | undefined => {
  for (let current: unknown = cause, depth = 0; current !== undefined && depth < 5; depth++) {
    if (Predicate.hasProperty(current, "code") && Predicate.isString(current.code)) return current.code
    if (Predicate.hasProperty(current, "errors") && Array.isArray(current.errors)) {
      const first = networkCode(current.errors[0])
      if (first !== undefined) return first
    }
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return undefined
}

const reasonOf = (error: unknown): { readonly tag: string; readonly cause?: unknown; readonly status?: number } => {
  if (!Predicate.hasProperty(error, "reason") || !Predicate.hasProperty(error.reason, "_tag")) return { tag: "" }
  const reason = error.reason
  const status =
    Predicate.hasProperty(reason, "response") && Predicate.hasProperty(reason.response, "status")
      ? Number(reason.response.status)
      : undefined
  return {
    tag: String(reason._tag),
    ...(Predicate.hasProperty(reason, "cause") ? { cause: reason.cause } : {}),
    ...(status === undefined ? {} : { status })
  }
}

/**
 * Turns any failure of a typed-client call into an `ApiFailure` with one line naming what was
 * asked (`what`) and where (`apiUrl`): the server's error body for 4xx/5xx, the connection error
 * when the server cannot be reached. Failures already rendered (`ApiFailure`, `CliFailure`) pass.
 */
export const toApiFailure =
  (apiUrl: string, what: string) =>
  (error: unknown): ApiFailure => {
    if (error instanceof ApiFailure) return error
    if (isErrorBody(error)) {
      const status = statusOfTag[error._tag] ?? 0
      const kind = kindOfStatus(status)
      const details = (error.details ?? []).map((detail) => `${detail.field}: ${detail.message}`).join("; ")
      const hint = hints[kind]
      return new ApiFailure({
        kind,
        message:
          `${what}: ${status} ${error.code}: ${error.error}` +
          (details === "" ? "" : ` (${details})`) +
          (hint === undefined ? "" : ` — ${hint}`)
      })
    }
    const reason = reasonOf(error)
    if (reason.tag === "TransportError") {
      const code = networkCode(reason.cause)
      return new ApiFailure({
        kind: "unreachable",
        message:
          `${what}: cannot reach the api at ${apiUrl}${code === undefined ? "" : ` (${code})`}` +
          " — is svc running there? Set --apiUrl or server.api in the config"
      })
    }
    if (reason.status !== undefined) {
      return new ApiFailure({
        kind: kindOfStatus(reason.status),
        message: `${what}: unexpected answer ${reason.status} from ${apiUrl}`
      })
    }
    if (reason.tag === "InvalidUrlError") {
      return new ApiFailure({ kind: "unreachable", message: `${what}: invalid api URL ${apiUrl}` })
    }
    const text = error instanceof Error ? error.message : String(error)
    return new ApiFailure({ kind: "apiError", message: `${what}: ${text.split("\n")[0]}` })
  }
