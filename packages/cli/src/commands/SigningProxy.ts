/**
 * `cli signing-proxy` (spec 4.8): a reverse proxy on 127.0.0.1 that forwards every request to one
 * svc service (or any URL) with a freshly signed admin token in `Authorization`, bodies streamed
 * both ways; `--enableLoginRedirect` also answers `/login-redirect` like `cli login-redirect`.
 */
import { Clock, Config, Console, Effect, Option } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import * as NodePath from "node:path"
import { rootCertificates } from "node:tls"
import { loadCliConfig, ConfigLocation } from "../CliConfig.ts"
import { fileExists, readText } from "../Files.ts"
import { copyHeaders, listenLoopback, makeAgents, relay } from "../HttpRelay.ts"
import { signingKeyFlags } from "../Keys.ts"
import {
  loginRedirectResponse,
  makeLoginUrlSigner,
  marketplaceLoginFlagErrors,
  resolveMarketplaceLoginPlan
} from "../MarketplaceLogin.ts"
import { makeRequestTokenSigner } from "../RequestToken.ts"
import { root } from "../Root.ts"
import { resolveSigningKey } from "../SignPlan.ts"
import {
  clonePortStep,
  defaultPortEnvVar,
  defaultSigningProxyPort,
  devAdminCertRelativePath,
  forwardUrl,
  proxyToServices,
  resolveProxyTarget,
  resolveSigningProxyPort
} from "../SigningProxyPlan.ts"

const rejectedTokenHint = "the target did not accept the signed token: is the signing key the one it verifies with?"

/** The path `--enableLoginRedirect` answers itself (with or without a query). */
export const loginRedirectPath = "/login-redirect"

const flags = {
  proxyTo: Flag.String("proxyTo").pipe(
    Flag.withMetavar("api|admin-api|public|URL"),
    Flag.withDescription(
      "Where to forward: a service id (its URL from config server.api, server.admin_api, server.marketplace, else the embedded default) or an absolute http(s) URL"
    ),
    Flag.withDefault("api")
  ),
  port: Flag.Int("port").pipe(
    Flag.withMetavar("PORT"),
    Flag.withDescription(
      `Port on 127.0.0.1, 0 for any free one (default: $${defaultPortEnvVar} or the variable config signing_proxy.port.env_var names, else signing_proxy.port.default, else ${defaultSigningProxyPort})`
    ),
    Flag.optional
  ),
  clone: Flag.Int("clone").pipe(
    Flag.withMetavar("N"),
    Flag.withDescription(
      `For the Nth further clone running side by side: the configured port + ${clonePortStep}·N (exclusive with --port)`
    ),
    Flag.withDefault(0)
  ),
  enableLoginRedirect: Flag.Boolean("enableLoginRedirect").pipe(
    Flag.withoutNegation,
    Flag.withDefault(false),
    Flag.withDescription(
      `Also answer GET ${loginRedirectPath} with a 302 to a freshly signed marketplace login URL (as cli login-redirect)`
    )
  ),
  returnTo: Flag.String("returnTo").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(`With --enableLoginRedirect: return_to when the request to ${loginRedirectPath} has none`),
    Flag.optional
  ),
  marketplaceUrl: Flag.String("marketplaceUrl").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(
      "With --enableLoginRedirect: public service base URL of the login URL (default: config server.marketplace, else http://127.0.0.1:8080)"
    ),
    Flag.optional
  ),
  caCert: Flag.String("caCert").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription(
      `PEM certificate to trust for an https target besides the system CAs (default for --proxyTo admin-api: ./${devAdminCertRelativePath}, the embedded default's, when present)`
    ),
    Flag.optional
  ),
  insecure: Flag.Boolean("insecure").pipe(
    Flag.withoutNegation,
    Flag.withDefault(false),
    Flag.withDescription("Do not verify the https target's certificate at all")
  ),
  apiUrl: Flag.String("apiUrl").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription("With --proxyTo api (the default): the api's base URL instead of config server.api"),
    Flag.optional
  ),
  actorId: Flag.String("actorId").pipe(
    Flag.withMetavar("EXTERNAL_ID"),
    Flag.withDescription('Actor the tokens are signed for (default: config admin_username, else "admin")'),
    Flag.optional
  ),
  ...signingKeyFlags
}

const flagErrors = (parsed: Command.Command.Config.Infer<typeof flags>): ReadonlyArray<string> => {
  const errors: Array<string> = []
  if (Option.isSome(parsed.port) && (parsed.port.value < 0 || parsed.port.value > 65_535)) {
    errors.push("--port must be between 0 and 65535")
  }
  if (parsed.clone < 0 || parsed.clone > 1000) errors.push("--clone must be between 0 and 1000")
  if (Option.isSome(parsed.port) && parsed.clone !== 0) errors.push("--port and --clone are mutually exclusive")
  if (Option.isSome(parsed.apiUrl) && parsed.proxyTo !== "api") errors.push("--apiUrl applies to --proxyTo api only")
  if (parsed.insecure && Option.isSome(parsed.caCert)) errors.push("--insecure and --caCert are mutually exclusive")
  if (!parsed.enableLoginRedirect && (Option.isSome(parsed.returnTo) || Option.isSome(parsed.marketplaceUrl))) {
    errors.push("--returnTo and --marketplaceUrl need --enableLoginRedirect")
  }
  errors.push(...marketplaceLoginFlagErrors({ ...parsed, expiresIn: Option.none() }))
  return errors
}

/** `signing-proxy`: forwards until SIGINT/SIGTERM, one line per request on stderr. */
export const signingProxy = Command.make(
  "signing-proxy",
  flags,
  Effect.fn("SigningProxy")(function* (parsed) {
    const { config } = yield* root
    const loaded = yield* loadCliConfig(config)
    const target = yield* Effect.fromResult(resolveProxyTarget(parsed.proxyTo, loaded, parsed.apiUrl))
    const envName = loaded.config.signing_proxy?.port?.env_var ?? defaultPortEnvVar
    const envValue = yield* Config.option(Config.String(envName)).pipe(Effect.orElseSucceed(() => Option.none()))
    const { port, source } = yield* Effect.fromResult(
      resolveSigningProxyPort(parsed, loaded, (name) =>
        name === envName ? Option.getOrUndefined(envValue) : undefined
      )
    )
    const subject = Option.getOrElse(parsed.actorId, () => loaded.config.admin_username ?? "admin")
    const key = yield* Effect.fromResult(resolveSigningKey(parsed, loaded))
    const freshToken = yield* makeRequestTokenSigner(subject, key)
    const { workDir } = yield* ConfigLocation
    const devCert = NodePath.resolve(workDir, devAdminCertRelativePath)
    const caPath = Option.isSome(parsed.caCert)
      ? parsed.caCert.value
      : target.name === "admin-api" && (yield* fileExists(devCert))
        ? devCert
        : undefined
    const ca = caPath === undefined ? undefined : [...rootCertificates, yield* readText(caPath, "CA certificate")]
    const loginSigner = parsed.enableLoginRedirect
      ? yield* Effect.gen(function* () {
          const plan = yield* Effect.fromResult(
            resolveMarketplaceLoginPlan({ ...parsed, expiresIn: Option.none() }, loaded)
          )
          return loginRedirectResponse(yield* makeLoginUrlSigner(plan), plan.returnTo)
        })
      : undefined

    yield* Effect.scoped(
      Effect.gen(function* () {
        const agents = yield* Effect.acquireRelease(
          Effect.sync(() => makeAgents({ ca, insecure: parsed.insecure })),
          (agents) => Effect.sync(agents.close)
        )
        const listening = yield* listenLoopback(port, (req, res) =>
          Effect.gen(function* () {
            const started = yield* Clock.currentTimeMillis
            const path = req.url ?? "/"
            const method = req.method ?? "GET"
            if (loginSigner !== undefined && (path === loginRedirectPath || path.startsWith(`${loginRedirectPath}?`))) {
              req.resume()
              const answer = yield* loginSigner(method, path)
              res.writeHead(answer.status, answer.headers)
              res.end(method === "HEAD" ? undefined : answer.body)
              return yield* Console.error(`${method} ${loginRedirectPath} -> ${answer.status} (login redirect)`)
            }
            const token = yield* freshToken
            const headers = copyHeaders(req.headers, (name) => name === "authorization")
            headers.authorization = `Bearer ${token}`
            const outcome = yield* relay(req, res, { url: forwardUrl(target.base, path), method, headers }, agents)
            const elapsed = (yield* Clock.currentTimeMillis) - started
            yield* Console.error(
              `${method} ${path} -> ${outcome.status ?? "---"} (${elapsed} ms)` +
                (outcome.error === undefined ? "" : `: ${outcome.error}`) +
                (outcome.callerLeft === true ? " (the caller left before the end)" : "") +
                (outcome.status === 401 ? ` — ${rejectedTokenHint}` : "")
            )
          })
        )
        yield* Console.error(
          `signing-proxy listening on ${listening.url} (port from ${source}) -> ${target.name === target.base.origin ? "" : `${target.name} `}${target.base.href}` +
            (parsed.insecure ? " (certificate NOT verified)" : caPath === undefined ? "" : ` (trusting ${caPath})`) +
            `, tokens for "${subject}"` +
            (loginSigner === undefined ? "" : `, login redirect at ${listening.url}${loginRedirectPath}`)
        )
        return yield* Effect.never
      })
    )
  })
).pipe(
  Command.validate((parsed) => {
    const errors = flagErrors(parsed)
    return errors.length === 0
      ? Effect.void
      : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
  }),
  Command.withDescription(
    `Reverse proxy on 127.0.0.1 signing a fresh admin token into every forwarded request (any Authorization sent is replaced); --proxyTo ${proxyToServices.join("|")}|URL`
  ),
  Command.withExamples([
    {
      command: "cli signing-proxy",
      description: "http://127.0.0.1:8888 -> the api; then: curl http://127.0.0.1:8888/api/v1/connectors"
    },
    {
      command: "cli signing-proxy --proxyTo admin-api --clone 1 --enableLoginRedirect",
      description: "The admin-api on port 8898, plus /login-redirect for a marketplace session"
    },
    {
      command: "cli signing-proxy --proxyTo https://api.svc.example.com --port 9000 --privateKeyPath admin.pem",
      description: "Any URL, an explicit port and key"
    }
  ])
)
