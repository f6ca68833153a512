/**
 * `cli proxy` (spec 4.8): a local, connection-scoped streaming proxy over `_proxy_raw`. A request
 * to `http://127.0.0.1:<port>/path?q` goes to `<upstream-base>/path?q` through the connection,
 * with a freshly signed admin token per request. One-shot mode (`cli proxy --connection cxn_…
 * curl https://api.example.com/v1/x`) starts a listener per upstream origin on a free port,
 * points the command's URLs at it, runs the command and exits with its exit code.
 *
 * The listener also works as an HTTP forward proxy (`HTTP_PROXY=http://127.0.0.1:9999`,
 * `curl -x`): an absolute-form request `GET http://<upstream host>/path` goes to
 * `<upstream-base>/path` (the base's scheme, so `http://` URLs reach an `https://` upstream); a
 * request for another host is refused with 421, and `CONNECT` (an `https://` URL through a proxy)
 * with 405, because a TLS tunnel would carry the bytes past the connection's credentials.
 */
import { Clock, Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { spawn } from "node:child_process"
import type { IncomingMessage, ServerResponse } from "node:http"
import { constants } from "node:os"
import { apiFlags, connectApi, validateApiFlags } from "../ApiClient.ts"
import { toApiFailure } from "../ApiFailure.ts"
import { CliFailure } from "../CliFailure.ts"
import { type Agents, copyHeaders, listenLoopback, makeAgents, relay } from "../HttpRelay.ts"
import { CommandExit, findRequestUrls, isOneShotProgram, rewriteArgs, upstreamBases } from "../OneShot.ts"
import { makeRequestTokenSigner } from "../RequestToken.ts"
import { root } from "../Root.ts"
import { forwardUrl } from "../SigningProxyPlan.ts"

/** Port of `proxy` unless `--port` is given (spec 4.8). */
export const defaultProxyPort = 9999

/** The methods `_proxy_raw` declares; any other goes as POST with `X-Svc-Upstream-Method`. */
const rawMethods = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])

/** The `_proxy_raw` request for a caller's `method` and upstream URL (docs/proxy.md). */
export const rawRequest = (
  apiUrl: string,
  connectionId: string,
  method: string,
  upstream: URL,
  callerHeaders: IncomingMessage["headers"],
  token: string
) => {
  const headers = copyHeaders(callerHeaders, (name) => name === "authorization" || name.startsWith("x-svc-"))
  headers.authorization = `Bearer ${token}`
  headers["x-svc-upstream-url"] = upstream.href
  if (!rawMethods.has(method)) headers["x-svc-upstream-method"] = method
  return {
    url: new URL(`${apiUrl}/api/v1/connections/${encodeURIComponent(connectionId)}/_proxy_raw`),
    method: rawMethods.has(method) ? method : "POST",
    headers
  }
}

/** Where a request to the listener goes: the upstream URL, or why it is refused (status and body). */
export type ProxyTarget =
  | { readonly _tag: "Forward"; readonly url: URL }
  | { readonly _tag: "Refuse"; readonly status: number; readonly code: string; readonly error: string }

const defaultPorts: Record<string, string> = { "http:": "80", "https:": "443" }

/**
 * The upstream URL of a request target: origin-form (`/path?q`) is relative to `base`;
 * absolute-form (`http://host/path?q`, what a client sends to a forward proxy) must name the
 * base's host (and port, when the URL gives one) and is then relative to `base` too.
 */
export const proxyTarget = (base: URL, requestTarget: string): ProxyTarget => {
  if (requestTarget.startsWith("/")) return { _tag: "Forward", url: forwardUrl(base, requestTarget) }
  const absolute = URL.canParse(requestTarget) ? new URL(requestTarget) : undefined
  if (absolute === undefined || (absolute.protocol !== "http:" && absolute.protocol !== "https:")) {
    return { _tag: "Refuse", status: 400, code: "invalid_request_target", error: "expected a path or an http URL" }
  }
  const port = absolute.port === "" ? undefined : absolute.port
  const basePort = base.port === "" ? defaultPorts[base.protocol] : base.port
  if (absolute.hostname !== base.hostname || (port !== undefined && port !== basePort)) {
    return {
      _tag: "Refuse",
      status: 421,
      code: "wrong_upstream_host",
      error: `this proxy forwards to ${base.host} only (got ${absolute.host})`
    }
  }
  return { _tag: "Forward", url: forwardUrl(base, `${absolute.pathname}${absolute.search}`) }
}

const refuse = (res: ServerResponse, refusal: Extract<ProxyTarget, { _tag: "Refuse" }>) =>
  Effect.sync(() => {
    const body = `${JSON.stringify({ error: refusal.error, code: refusal.code })}\n`
    res.writeHead(refusal.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })

const parseUpstreamBase = (text: string): URL | undefined => {
  if (!URL.canParse(text)) return undefined
  const url = new URL(text)
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") return undefined
  return url
}

const signalExitCode = (signal: NodeJS.Signals | null): number =>
  signal === null ? 1 : 128 + (constants.signals[signal] ?? 0)

/** Runs `program args` with the terminal's stdio; answers its exit code (128+n for signal n). */
const runCommand = (program: string, args: ReadonlyArray<string>) =>
  Effect.callback<number, CliFailure>((resume) => {
    const child = spawn(program, args, { stdio: "inherit" })
    child.once("error", (error: NodeJS.ErrnoException) =>
      resume(
        Effect.fail(
          new CliFailure({
            message: `cannot run ${program}: ${error.code === "ENOENT" ? "not found on PATH" : error.message}`
          })
        )
      )
    )
    child.once("exit", (code, signal) => resume(Effect.succeed(code ?? signalExitCode(signal))))
    return Effect.sync(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    })
  })

export const proxy = Command.make(
  "proxy",
  {
    connection: Flag.String("connection").pipe(
      Flag.withMetavar("ID"),
      Flag.withDescription("The connection (cxn_…) whose credentials the requests carry")
    ),
    upstreamBase: Flag.String("upstream-base").pipe(
      Flag.withMetavar("URL"),
      Flag.withDescription(
        "Origin (and optional base path) the requests are relative to, e.g. https://api.example.com; in one-shot mode the command's URL paths go to it (without it, each URL's own origin)"
      ),
      Flag.optional
    ),
    port: Flag.Int("port").pipe(
      Flag.withMetavar("PORT"),
      Flag.withDescription(
        `Port on 127.0.0.1, 0 for any free one (default ${defaultProxyPort}; one-shot mode: a free one)`
      ),
      Flag.optional
    ),
    command: Argument.String("command").pipe(
      Argument.withDescription("One-shot mode: a curl or wget command line, after the flags"),
      Argument.variadic()
    ),
    ...apiFlags
  },
  Effect.fn("Proxy")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const oneShot = flags.command.length > 0
    const connection = yield* client.connections.get({ params: { id: flags.connection } }).pipe(
      Effect.mapError(toApiFailure(target.apiUrl, `connection ${flags.connection}`)),
      // proxying needs connections:proxy, not connections:get: an actor without get still proxies
      Effect.catchIf(
        (failure) => failure.kind === "forbidden",
        (failure) => Effect.as(Console.error(`warning: ${failure.message}`), undefined)
      )
    )
    if (connection !== undefined && connection.state !== "configured") {
      const message = `connection ${connection.id} is ${connection.state}, not configured: svc answers its requests with 409`
      if (oneShot) return yield* new CliFailure({ message })
      yield* Console.error(`warning: ${message}`)
    }
    const freshToken = yield* makeRequestTokenSigner(target.subject, target.key)

    const forwarding =
      (agents: Agents, upstreamBase: URL, log: boolean) => (req: IncomingMessage, res: ServerResponse) =>
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const method = req.method ?? "GET"
          const route = proxyTarget(upstreamBase, req.url ?? "/")
          if (route._tag === "Refuse") {
            yield* refuse(res, route)
            yield* Console.error(`${method} ${req.url ?? "/"} -> ${route.status}: ${route.error}`)
            return
          }
          const upstream = route.url
          const request = rawRequest(target.apiUrl, flags.connection, method, upstream, req.headers, yield* freshToken)
          const outcome = yield* relay(req, res, request, agents)
          const elapsed = (yield* Clock.currentTimeMillis) - started
          if (log || outcome.error !== undefined) {
            yield* Console.error(
              `${method} ${upstream.href} -> ${outcome.status ?? "---"} (${elapsed} ms)` +
                (outcome.error === undefined ? "" : `: ${outcome.error}`) +
                (outcome.callerLeft === true ? " (the caller left before the end)" : "")
            )
          }
        })

    yield* Effect.scoped(
      Effect.gen(function* () {
        const agents = yield* Effect.acquireRelease(
          Effect.sync(() => makeAgents({})),
          (agents) => Effect.sync(agents.close)
        )
        if (!oneShot) {
          const base = parseUpstreamBase(Option.getOrElse(flags.upstreamBase, () => ""))
          if (base === undefined) return yield* new CliFailure({ message: "--upstream-base: expected an http(s) URL" })
          const listening = yield* listenLoopback(
            Option.getOrElse(flags.port, () => defaultProxyPort),
            forwarding(agents, base, true)
          )
          yield* Console.error(
            `proxy listening on ${listening.url} -> ${base.href} through connection ${flags.connection} (api ${target.apiUrl})`
          )
          return yield* Effect.never
        }
        const [program = "", ...args] = flags.command
        const urls = yield* Effect.fromResult(findRequestUrls(program, args))
        const bases = upstreamBases(
          urls,
          Option.isSome(flags.upstreamBase) ? parseUpstreamBase(flags.upstreamBase.value) : undefined
        )
        // one listener per upstream base
        const listeners = new Map<string, string>()
        for (const base of new Set(bases.values())) {
          const listening = yield* listenLoopback(0, forwarding(agents, new URL(base), false))
          listeners.set(base, listening.url)
        }
        const code = yield* runCommand(
          program,
          rewriteArgs(args, urls, (origin) => listeners.get(bases.get(origin) ?? "") ?? origin)
        )
        if (code !== 0) return yield* new CommandExit({ program, code })
      })
    )
  })
).pipe(
  Command.validate((flags) => {
    const errors: Array<string> = []
    if (flags.connection.trim() === "") errors.push("--connection must not be empty")
    if (flags.command.length > 0) {
      const [program = ""] = flags.command
      if (!isOneShotProgram(program)) errors.push(`one-shot mode runs curl or wget, not "${program}"`)
      if (Option.isSome(flags.port)) errors.push("one-shot mode listens on a free port: drop --port")
    } else if (Option.isNone(flags.upstreamBase)) {
      errors.push("--upstream-base is required (or give a curl or wget command)")
    }
    if (Option.isSome(flags.upstreamBase) && parseUpstreamBase(flags.upstreamBase.value) === undefined) {
      errors.push(
        `--upstream-base: expected an http(s) URL without credentials, query or fragment (got "${flags.upstreamBase.value}")`
      )
    }
    if (
      flags.command.length === 0 &&
      Option.isSome(flags.port) &&
      (flags.port.value < 0 || flags.port.value > 65_535)
    ) {
      errors.push("--port must be between 0 and 65535")
    }
    return validateApiFlags(flags, errors)
  }),
  Command.withDescription(
    "Local streaming proxy through one connection (_proxy_raw): http://127.0.0.1:<port>/path goes to <upstream-base>/path with the connection's credentials; or run one curl/wget command through it"
  ),
  Command.withExamples([
    {
      command: "cli proxy --connection cxn_123 --upstream-base https://api.github.com",
      description: "Then: curl http://127.0.0.1:9999/user reaches https://api.github.com/user as the connection"
    },
    {
      command: "cli proxy --connection cxn_123 curl -s https://api.github.com/user",
      description: "One-shot: run curl through the connection, its output and exit code passed through"
    },
    {
      command: "HTTP_PROXY=http://127.0.0.1:9999 curl http://api.github.com/user",
      description:
        "With the proxy running: as a forward proxy, http:// URLs of the upstream's host go to the upstream base"
    },
    {
      command: "cli proxy --connection cxn_123 wget -qO- https://api.example.com/v1/items",
      description: "One-shot with wget"
    }
  ])
)
