/**
 * Runs a `cli` command in the test's own process, the way `packages/cli/src/main.ts` runs it in
 * its own: `runCli` inside `layerCli` (the same layers main.ts provides), its failures reported
 * and its exit code chosen as `NodeRuntime.runMain` does (`Runtime.defaultTeardown`: 0, the
 * failure's `errorExitCode`, 1, or 130 when interrupted), with
 *
 * - stdout and stderr: a `node:console` `Console` over two strings (what `Console.log` and
 *   `Console.error` write), and progress lines on the same stderr;
 * - the environment: only `env` (an `env`-only `ConfigProvider`; the command reads `COLUMNS` and
 *   configured port variables through `Config`);
 * - standard input: `input`;
 * - `interrupt()`: what SIGINT does to the process (its main fiber is interrupted).
 *
 * A command takes a few milliseconds this way instead of a Node start (0.3–0.6 CPU-s, more on a
 * busy machine). Tests of what only a process shows (the `bin/cli` launcher, a real signal, the
 * process's `HOME`) keep spawning `bin/cli`.
 */
import { layerCli, runCli } from "@svc/cli/Cli"
import { Cause, ConfigProvider, Console, Effect, Fiber, Layer, Runtime, Stdio, Stream } from "effect"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"

/** How a command ended and what it wrote. */
export interface CliOutcome {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** A command under way. */
export interface CliRun {
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exit: Promise<CliOutcome>
  /** Interrupts the command as SIGINT interrupts the process. */
  readonly interrupt: () => void
}

export interface CliInProcessOptions {
  /** The working directory (where an embedded svc keeps `.svc/`). */
  readonly cwd: string
  /** The home directory (`~/.svc.yaml`). */
  readonly home: string
  /** The command's whole environment. */
  readonly env?: Readonly<Record<string, string>>
  /** Standard input (default: empty). */
  readonly input?: string
}

/** Starts `cli <args>` in this process; it runs until it ends or is interrupted. */
export const startCliInProcess = (args: ReadonlyArray<string>, options: CliInProcessOptions): CliRun => {
  let stdout = ""
  let stderr = ""
  const sink = (append: (text: string) => void) =>
    new Writable({
      decodeStrings: false,
      write(chunk: string | Buffer, _encoding, done) {
        append(String(chunk))
        done()
      }
    })
  const out = sink((text) => {
    stdout += text
  })
  const err = sink((text) => {
    stderr += text
  })
  const console = new NodeConsole({ stdout: out, stderr: err })
  const stdin = new TextEncoder().encode(options.input ?? "")
  const program = runCli(args).pipe(
    Effect.provide(
      Layer.mergeAll(
        Stdio.layerTest({ args: Effect.succeed(args), stdin: stdin.length === 0 ? Stream.empty : Stream.make(stdin) }),
        ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ...options.env } }))
      )
    ),
    Effect.provide(layerCli({ homeDir: options.home, workDir: options.cwd, stderr: err })),
    // As `Runtime.makeRunMain` reports a failure that was not reported already.
    Effect.tapCause((cause) =>
      Cause.hasInterruptsOnly(cause) || !Runtime.getErrorReported(Cause.squash(cause))
        ? Effect.void
        : Effect.logError(cause)
    ),
    Effect.provideService(Console.Console, console)
  )
  const fiber = Effect.runFork(program)
  const exit = new Promise<CliOutcome>((resolve) => {
    fiber.addObserver((result) =>
      Runtime.defaultTeardown(result, (code) =>
        // after the streams have taken every write
        setImmediate(() => resolve({ code, signal: null, stdout, stderr }))
      )
    )
  })
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    exit,
    interrupt: () => {
      Effect.runFork(Fiber.interrupt(fiber))
    }
  }
}
