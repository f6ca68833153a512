/**
 * The assembled `cli` command tree and how it is run, independent of the process (see `main.ts`).
 */
import { NodeServices } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { CliOutput, Command } from "effect/cli"
import { ConfigLocation } from "./CliConfig.ts"
import { events } from "./commands/Events.ts"
import { list } from "./commands/List.ts"
import { loginRedirect } from "./commands/LoginRedirect.ts"
import { mcpToken } from "./commands/McpToken.ts"
import { proxy } from "./commands/Proxy.ts"
import { signJwt } from "./commands/SignJwt.ts"
import { signingProxy } from "./commands/SigningProxy.ts"
import { tasks } from "./commands/Tasks.ts"
import { signMarketplaceLoginUrl } from "./commands/SignMarketplaceLoginUrl.ts"
import { verifyJwt } from "./commands/VerifyJwt.ts"
import { webhooks } from "./commands/Webhooks.ts"
import { markOneShot } from "./OneShot.ts"
import { layerStderrProgress } from "./Progress.ts"
import { root } from "./Root.ts"

export const version = "0.1.0"

/** `cli` with every subcommand. */
export const cli = root.pipe(
  Command.withSubcommands([
    signJwt,
    mcpToken,
    verifyJwt,
    signMarketplaceLoginUrl,
    loginRedirect,
    list,
    tasks,
    events,
    signingProxy,
    proxy,
    webhooks
  ])
)

/** Writes usage errors (without the help page) to stderr so stdout carries only command output. */
export const StderrPresenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.gen(function* () {
          const formatter = yield* CliOutput.Formatter
          yield* Console.error(formatter.formatErrors(event.errors))
          yield* Console.error(`\nRun "${event.commandPath.join(" ")} --help" for usage.`)
        })
      : CliOutput.defaultPresenter.present(event)
})

/** Failures of a command are one line on stderr, `error: <message>` (README "Exit codes"). */
export const CliFormatter = Layer.unwrap(
  Effect.sync(() => {
    const base = CliOutput.defaultFormatter()
    return CliOutput.layer({ ...base, formatError: (error) => `error: ${error.message}` })
  })
)

/**
 * Runs `cli` with explicit arguments (without the program name); the curl or wget of a one-shot
 * `proxy` is set apart with `--` first, so its own options are not read as `cli` flags.
 */
export const runCli = (args: ReadonlyArray<string>) =>
  Command.runWith(cli, { version })(markOneShot(args)).pipe(Effect.provide(Layer.merge(StderrPresenter, CliFormatter)))

/**
 * Everything a `cli` process provides around `runCli`: the Node services, the configuration's home
 * and working directories, and progress on `stderr`. `main.ts` passes the process's own; tests
 * that run commands in process (test/support/CliInProcess.ts) pass theirs.
 */
export const layerCli = (options: {
  readonly homeDir: string
  readonly workDir: string
  readonly stderr: { readonly isTTY?: boolean; write(text: string): unknown }
}) =>
  Layer.mergeAll(
    NodeServices.layer,
    ConfigLocation.layer(options.homeDir, options.workDir),
    layerStderrProgress(options.stderr)
  )
