/**
 * The one-shot mode of `cli proxy` (spec 4.8), pure parts: recognising `cli … proxy [flags] curl …`
 * on the command line, finding the request URLs among the command's arguments and rewriting their
 * scheme and host to a local listener (path, query and fragment kept byte for byte).
 */
import { Result, Runtime, Schema } from "effect"
import * as NodePath from "node:path"
import { CliFailure } from "./CliFailure.ts"

/** The commands one-shot mode runs. */
export const oneShotPrograms = ["curl", "wget"] as const

/** Whether `arg` names curl or wget (a bare name or a path to one). */
export const isOneShotProgram = (arg: string): boolean =>
  (oneShotPrograms as ReadonlyArray<string>).includes(NodePath.basename(arg))

// flags that take a separate value, by level: the root's (with effect/cli's built-ins) and proxy's
const rootValueFlags = new Set(["--config", "--log-level", "--completions"])
const proxyValueFlags = new Set([
  "--connection",
  "--upstream-base",
  "--port",
  "--apiUrl",
  "--actorId",
  "--privateKeyPath",
  "--secretKeyPath",
  "--config",
  "--log-level"
])

/**
 * Inserts `--` before the curl or wget of `cli [root flags] proxy [proxy flags] curl|wget …`, so
 * that the command's own options reach it untouched instead of being parsed as `cli` flags. Any
 * other command line (or one that already has `--`) is returned as it is.
 */
export const markOneShot = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const skip = (from: number, valueFlags: ReadonlySet<string>): number => {
    let i = from
    while (i < args.length) {
      const arg = args[i] ?? ""
      if (arg === "--" || !arg.startsWith("-") || arg === "-") return i
      i += valueFlags.has(arg) ? 2 : 1
    }
    return i
  }
  const command = skip(0, rootValueFlags)
  if (args[command] !== "proxy") return args
  const first = skip(command + 1, proxyValueFlags)
  const arg = args[first]
  return arg !== undefined && arg !== "--" && isOneShotProgram(arg)
    ? [...args.slice(0, first), "--", ...args.slice(first)]
    : args
}

// options whose (separate) value may look like a URL but is not the request's: never rewritten
const nonRequestValueOptions: Record<(typeof oneShotPrograms)[number], ReadonlySet<string>> = {
  curl: new Set([
    ...["-e", "--referer", "-x", "--proxy", "--preproxy", "-H", "--header", "--proxy-header", "-d", "--data"],
    ...["--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-F", "--form"],
    ...["--form-string", "-u", "--user", "-U", "--proxy-user", "-A", "--user-agent", "-o", "--output"],
    ...["-b", "--cookie", "-c", "--cookie-jar", "-T", "--upload-file", "-K", "--config", "-w", "--write-out"]
  ]),
  wget: new Set([
    ...["--referer", "--header", "--post-data", "--body-data", "--post-file", "--body-file", "-O"],
    ...["--output-document", "-e", "--execute", "-U", "--user-agent", "-o", "--output-file", "-a"],
    ...["--append-output", "-i", "--input-file", "-P", "--directory-prefix"]
  ])
}

const urlPattern = /^(https?):\/\/([^/?#]*)(.*)$/is

/** A request URL in the command's arguments. */
export interface RequestUrl {
  readonly index: number
  /** `scheme://host[:port]` normalised (the upstream base of its listener). */
  readonly origin: string
  /** Path, query and fragment exactly as written. */
  readonly rest: string
}

const takesValue = (arg: string, options: ReadonlySet<string>): boolean => {
  if (arg.startsWith("--")) return !arg.includes("=") && options.has(arg)
  // a cluster such as -sSH: only its last letter can take the next argument
  return arg.length >= 2 && options.has(`-${arg[arg.length - 1]}`)
}

/**
 * The http(s) URLs among `args` (the arguments after the program name) that are request URLs:
 * every argument of the form `http(s)://…` except the value of an option such as `-H`, `-e`,
 * `-x` or `-d`. Fails when there is none, or one carries credentials or no parsable host.
 */
export const findRequestUrls = (
  program: string,
  args: ReadonlyArray<string>
): Result.Result<ReadonlyArray<RequestUrl>, CliFailure> => {
  const name = NodePath.basename(program) as (typeof oneShotPrograms)[number]
  const options = nonRequestValueOptions[name] ?? new Set<string>()
  const found: Array<RequestUrl> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ""
    if (arg.startsWith("-") && arg !== "-") {
      if (takesValue(arg, options)) i++
      continue
    }
    const match = urlPattern.exec(arg)
    if (match === null) continue
    const [, scheme = "", authority = "", rest = ""] = match
    if (authority.includes("@")) {
      return Result.fail(
        new CliFailure({
          message: `one-shot mode: the URL "${arg}" carries credentials; the connection supplies them, remove them`
        })
      )
    }
    const base = `${scheme.toLowerCase()}://${authority}`
    if (authority === "" || !URL.canParse(base)) {
      return Result.fail(new CliFailure({ message: `one-shot mode: cannot read the host of "${arg}"` }))
    }
    found.push({ index: i, origin: new URL(base).origin, rest })
  }
  if (found.length === 0) {
    return Result.fail(
      new CliFailure({
        message: `one-shot mode: no http:// or https:// URL among the ${name} arguments (write the URL with its scheme)`
      })
    )
  }
  return Result.succeed(found)
}

/**
 * The upstream base of each request URL's listener, by the URL's origin (spec 4.8, flags first):
 * with `--upstream-base`, every URL's path goes to that base (one listener); without, each
 * origin is its own base (a listener per origin).
 */
export const upstreamBases = (
  urls: ReadonlyArray<RequestUrl>,
  upstreamBase: URL | undefined
): ReadonlyMap<string, string> =>
  new Map(urls.map((url) => [url.origin, upstreamBase === undefined ? url.origin : upstreamBase.href]))

/** `args` with each request URL's scheme and host replaced by its origin's listener URL. */
export const rewriteArgs = (
  args: ReadonlyArray<string>,
  urls: ReadonlyArray<RequestUrl>,
  listenerOf: (origin: string) => string
): ReadonlyArray<string> => {
  const out = [...args]
  for (const url of urls) out[url.index] = `${listenerOf(url.origin)}${url.rest}`
  return out
}

/** The exit code of a one-shot command that did not exit 0: becomes the exit code of `cli`. */
export class CommandExit extends Schema.TaggedError<CommandExit>()("CommandExit", {
  program: Schema.String,
  code: Schema.Number
}) {
  override get [Runtime.errorExitCode]() {
    return this.code
  }
  override get [Runtime.errorReported]() {
    return false
  }
}
