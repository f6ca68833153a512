/**
 * Process entry point of `cli`: the only place reading the process environment (home and working
 * directory, whether stderr is a terminal).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Stdio } from "effect"
import { homedir } from "node:os"
import { layerCli, runCli } from "./Cli.ts"

// the curl or wget of a one-shot `proxy` is set apart with `--` (runCli) so its options reach it untouched
Stdio.Stdio.use(({ args }) => Effect.flatMap(args, runCli)).pipe(
  Effect.provide(layerCli({ homeDir: homedir(), workDir: process.cwd(), stderr: process.stderr })),
  NodeRuntime.runMain
)
