/**
 * The `svc` command: `svc serve`, `svc migrate`, `svc certs` and `svc config check`, run by
 * `main.ts` (once the heap limits are set, `Launcher.ts`) with the process's environment and
 * working directory (`Invocation`): the entry reads the environment, this module assembles the graph.
 *
 * Only the command line is loaded up front: the configuration loader, the server (`Serve.ts`) and
 * the certificate writer are `import()`ed by the command that needs them, so `svc --help` costs
 * what parsing the command line costs (docs/performance.md "Start-up and CLI").
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Console, Context, Effect, Exit, Layer, Logger, Option, References, Runtime } from "effect"
import { Command, Flag } from "effect/cli"
import { allServiceIds, type ServiceId } from "@svc/domain/Auth"
import type { ConfigError } from "./config/ConfigLoader.ts"
import type { ResolvedConfig } from "./config/SvcConfig.ts"
import { shutdownGraceMs } from "./config/Durations.ts"
import { version } from "./config/Version.ts"

/** Where the command runs: the environment (`SVC__…` overrides, `SVC_CONFIG`) and working directory. */
export class Invocation extends Context.Service<
  Invocation,
  { readonly env: Readonly<Record<string, string | undefined>>; readonly cwd: string }
>()("svc/server/SvcCommand/Invocation") {}

/** The server, loaded by `serve` only (`migrate` loads `Migrate.ts`). */
const server = Effect.promise(() => import("./Serve.ts"))

const configFlag = Flag.String("config").pipe(
  Flag.withDescription(
    "Configuration file (default: $SVC_CONFIG, else ./svc.yaml when present, else the embedded default)"
  ),
  Flag.optional
)

/** One line for a startup failure: its message, else its cause's, else its tag. */
const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  if (error.message !== "") return error.message
  const cause = error.cause
  const tag = "_tag" in error ? String(error._tag) : error.name
  return cause instanceof Error && cause.message !== "" ? `${tag}: ${cause.message}` : tag
}

/**
 * Logs go to stderr (spec 8.3), as text or one JSON object per line, stamped with `trace_id` and
 * `span_id` under a recording span; stdout is for the banner.
 */
const loggerLayer = (
  stderrLogger: (format: "text" | "json") => Logger.Logger<unknown, void>,
  format: "text" | "json"
) => Layer.mergeAll(Logger.layer([stderrLogger(format)]), Layer.succeed(Logger.LogToStderr, true))

const logLevels = { trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const

const withConfig = <A, E, R>(path: Option.Option<string>, f: (config: ResolvedConfig) => Effect.Effect<A, E, R>) =>
  Effect.promise(() => import("./config/ConfigLoader.ts")).pipe(
    Effect.flatMap(({ loadConfig }) =>
      Effect.flatMap(Invocation, ({ cwd, env }) => loadConfig({ configPath: Option.getOrUndefined(path), cwd, env }))
    ),
    Effect.matchEffect({
      onFailure: (error: ConfigError) =>
        Console.error(`svc: ${error.message}`).pipe(
          Effect.andThen(
            Effect.sync(() => {
              process.exitCode = 2
            })
          )
        ),
      onSuccess: (config) =>
        f(config).pipe(
          Effect.provideService(References.MinimumLogLevel, logLevels[config.log.level]),
          Effect.provide(
            Effect.promise(() => import("./telemetry/Logging.ts")).pipe(
              Effect.map(({ stderrLogger }) => loggerLayer(stderrLogger, config.log.format)),
              Layer.unwrap
            )
          ),
          Effect.asVoid,
          // A startup failure (schema behind, store unreachable, unusable key, port in use) is one line and exit 1.
          Effect.catch((error) =>
            Console.error(`svc: ${describe(error)}`).pipe(
              Effect.andThen(
                Effect.sync(() => {
                  process.exitCode = 1
                })
              )
            )
          )
        )
    })
  )

/**
 * The shutdown deadline: once SIGTERM/SIGINT arrives, the process exits within
 * `http.shutdown_delay` + `http.drain_timeout` + 2 s even if something hangs (then with exit code 1 and one line).
 */
const armShutdownDeadline = (config: ResolvedConfig) =>
  Effect.sync(() => {
    const ms = config.http.shutdownDelayMs + config.http.drainTimeoutMs + shutdownGraceMs
    const arm = () => {
      setTimeout(() => {
        process.stderr.write(`svc: shutdown did not finish within ${ms} ms; exiting\n`)
        process.exit(1)
      }, ms).unref()
    }
    process.once("SIGTERM", arm)
    process.once("SIGINT", arm)
  })

const serveCommand = Command.make(
  "serve",
  {
    config: configFlag,
    service: Flag.Literals("service", allServiceIds).pipe(
      Flag.withDescription("Run only this service (repeatable): api, admin-api, public or worker. Default: all four"),
      Flag.atLeast(0)
    ),
    migrate: Flag.Boolean("migrate").pipe(
      Flag.withDescription("Apply pending migrations before serving (always done on the embedded default)"),
      Flag.withDefault(false)
    )
  },
  ({ config, service, migrate }) =>
    withConfig(config, (resolved) =>
      Effect.andThen(
        armShutdownDeadline(resolved),
        Effect.flatMap(server, ({ serve }) =>
          serve(resolved, service.length === 0 ? allServiceIds : [...new Set<ServiceId>(service)], { migrate })
        )
      )
    )
).pipe(Command.withDescription("Run the services until SIGINT or SIGTERM, then shut down gracefully"))

const migrateCommand = Command.make("migrate", { config: configFlag }, ({ config }) =>
  withConfig(config, (resolved) =>
    Effect.flatMap(
      Effect.promise(() => import("./Migrate.ts")),
      ({ runMigrations }) => runMigrations(resolved)
    )
  )
).pipe(Command.withDescription("Apply pending migrations to the main and app-metrics databases, then exit"))

const certsCommand = Command.make(
  "certs",
  {
    out: Flag.String("out").pipe(Flag.withDescription("Directory to write ca.pem, runner.pem and runner-key.pem into")),
    host: Flag.String("host").pipe(
      Flag.withDescription("A further DNS name or IP address the runners are dialled at (repeatable)"),
      Flag.atLeast(0)
    )
  },
  ({ out, host }) =>
    Effect.promise(() => import("./crypto/DevCertificates.ts")).pipe(
      Effect.flatMap(({ writeCertificates }) => writeCertificates(out, host)),
      Effect.flatMap((paths) =>
        Console.log(
          [
            `wrote ${paths.ca}, ${paths.cert} and ${paths.key}`,
            "use them on every process of the deployment:",
            `cluster: { tls: { ca: ${paths.ca}, cert: ${paths.cert}, key: ${paths.key} } }`
          ].join("\n")
        )
      ),
      Effect.catch((error) =>
        Console.error(`svc: ${error.message}`).pipe(
          Effect.andThen(
            Effect.sync(() => {
              process.exitCode = 1
            })
          )
        )
      )
    )
).pipe(
  Command.withDescription(
    "Write a development CA and a certificate signed by it for the runner transport's mutual TLS (cluster.tls)"
  )
)

/** Loads the configuration exactly as `serve` does (file, `SVC__` overrides, cross-key rules) and says so: exit 0, or 2. */
const configCheckCommand = Command.make("check", { config: configFlag }, ({ config }) =>
  withConfig(config, (resolved) => Console.log(`svc: configuration ok (${resolved.source})`))
).pipe(
  Command.withDescription(
    "Load and validate the configuration as serve would (file, SVC__ overrides, cross-key rules); exit 0 when valid, 2 when not. Reads no key file and opens no store"
  )
)

const configCommand = Command.make("config").pipe(
  Command.withDescription("Configuration tools"),
  Command.withSubcommands([configCheckCommand])
)

const svc = Command.make("svc").pipe(
  Command.withDescription("svc: a self-hosted connection proxy"),
  Command.withSubcommands([serveCommand, migrateCommand, certsCommand, configCommand])
)

/** SIGINT/SIGTERM end `serve` gracefully: exit 0, not the default 130; an exit code set above wins. */
const teardown: Runtime.Teardown = (exit, onExit) => {
  if (Exit.isSuccess(exit)) return onExit(typeof process.exitCode === "number" ? process.exitCode : 0)
  if (Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
  return Runtime.defaultTeardown(exit, onExit)
}

/** Runs the command line of the process (`process.argv`) with `invocation`, until it ends. */
export const run = (invocation: Invocation["Service"]): void =>
  svc.pipe(
    Command.run({ version }),
    Effect.provideService(Invocation, invocation),
    Effect.provide(NodeServices.layer),
    NodeRuntime.runMain({ teardown })
  )
