/**
 * `cli login-redirect` (spec 4.8, 5.9): a local stand-in for the host application's
 * session-initiation endpoint; every GET answers 302 to a freshly signed marketplace login URL.
 */
import { Console, Effect, FiberSet } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { createServer } from "node:http"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { loadCliConfig } from "../CliConfig.ts"
import { CliFailure } from "../CliFailure.ts"
import {
  loginRedirectResponse,
  makeLoginUrlSigner,
  marketplaceLoginFlagErrors,
  marketplaceLoginFlags,
  resolveMarketplaceLoginPlan
} from "../MarketplaceLogin.ts"
import type { LoginRedirectResponse } from "../MarketplaceLogin.ts"
import { root } from "../Root.ts"

/** Port of `login-redirect` unless `--port` is given. */
export const defaultLoginRedirectPort = 8889

/** The flags of `login-redirect`: the shared login flags plus the listen address. */
export const loginRedirectFlags = {
  ...marketplaceLoginFlags,
  port: Flag.Int("port").pipe(
    Flag.withMetavar("PORT"),
    Flag.withDescription(`Port to listen on, 0 for any free port (default ${defaultLoginRedirectPort})`),
    Flag.withDefault(defaultLoginRedirectPort)
  ),
  host: Flag.String("host").pipe(
    Flag.withMetavar("HOST"),
    Flag.withDescription("Address to listen on (default 127.0.0.1)"),
    Flag.withDefault("127.0.0.1")
  )
}

/** Where a started listener is reachable. */
export interface ListenAddress {
  readonly port: number
  /** `http://host:port`, IPv6 hosts in brackets. */
  readonly url: string
}

/** What `serveHttp` needs: the listen address and the answer to each request. */
export interface ServeOptions {
  readonly host: string
  readonly port: number
  readonly respond: (method: string, target: string) => Effect.Effect<LoginRedirectResponse>
}

const listenFailure = (error: NodeJS.ErrnoException, host: string, port: number) =>
  new CliFailure({
    message: `cannot listen on ${host}:${port}: ${
      error.code === "EADDRINUSE"
        ? "address already in use"
        : error.code === "EADDRNOTAVAIL" || error.code === "ENOTFOUND"
          ? "address not available"
          : error.message
    }`
  })

const listen = (host: string, port: number, handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  Effect.callback<Server, CliFailure>((resume) => {
    const server = createServer({ maxHeaderSize: 16_384, requestTimeout: 30_000, headersTimeout: 10_000 }, handler)
    const onError = (error: NodeJS.ErrnoException) => resume(Effect.fail(listenFailure(error, host, port)))
    server.once("error", onError)
    server.listen(port, host, () => {
      server.off("error", onError)
      server.on("error", () => {})
      resume(Effect.succeed(server))
    })
    return Effect.sync(() => server.close())
  })

const close = (server: Server) =>
  Effect.callback<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  })

/**
 * Starts a node:http listener for the current scope (closed, connections included, when the scope
 * closes); each request is answered by `respond` in a fiber of the scope.
 */
export const serveHttp = Effect.fnUntraced(function* (options: ServeOptions) {
  const run = yield* FiberSet.makeRuntime<never, void, never>()
  const server = yield* Effect.acquireRelease(
    listen(options.host, options.port, (req, res) => {
      req.resume()
      run(
        Effect.flatMap(options.respond(req.method ?? "GET", req.url ?? "/"), (answer) =>
          Effect.sync(() => {
            res.writeHead(answer.status, answer.headers)
            res.end(answer.body)
          })
        )
      )
    }),
    close
  )
  const { port } = server.address() as AddressInfo
  const host = options.host.includes(":") ? `[${options.host}]` : options.host
  return { port, url: `http://${host}:${port}` } satisfies ListenAddress
})

/** `login-redirect`: signs a new login URL per GET and redirects to it until SIGINT/SIGTERM. */
export const loginRedirect = Command.make(
  "login-redirect",
  loginRedirectFlags,
  Effect.fn("LoginRedirect")(function* (flags) {
    const { config } = yield* root
    const loaded = yield* loadCliConfig(config)
    const plan = yield* Effect.fromResult(resolveMarketplaceLoginPlan(flags, loaded))
    const signer = yield* makeLoginUrlSigner(plan)
    yield* Effect.scoped(
      Effect.gen(function* () {
        const address = yield* serveHttp({
          host: flags.host,
          port: flags.port,
          respond: loginRedirectResponse(signer, plan.returnTo)
        })
        yield* Console.log(`login-redirect listening on ${address.url}`)
        return yield* Effect.never
      })
    )
  })
).pipe(
  Command.validate((flags) => {
    const errors = [...marketplaceLoginFlagErrors(flags)]
    if (!Number.isInteger(flags.port) || flags.port < 0 || flags.port > 65_535) {
      errors.push("--port must be between 0 and 65535")
    }
    if (flags.host.trim() === "") errors.push("--host must not be empty")
    return errors.length === 0
      ? Effect.void
      : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
  }),
  Command.withDescription(
    "Stand-in for the host application's session-initiation URL: every GET redirects (302) to a new signed " +
      "marketplace login URL, passing return_to through"
  ),
  Command.withExamples([
    { command: "cli login-redirect", description: "Listen on http://127.0.0.1:8889 for the configured admin_username" },
    {
      command: "cli login-redirect --port 0 --actorId user-42 --returnTo /integrations",
      description: "Any free port, one actor, default return_to when the request has none"
    }
  ])
)
