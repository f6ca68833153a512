/**
 * Process entry point of `cli`: the only place reading the process environment (home and working
 * directory, whether stderr is a terminal).
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer, Stdio } from "effect"
import { Command } from "effect/cli"
import { homedir } from "node:os"
import { cli, CliFormatter, StderrPresenter, version } from "./Cli.ts"
import { ConfigLocation } from "./CliConfig.ts"
import { markOneShot } from "./OneShot.ts"
import { layerStderrProgress } from "./Progress.ts"

// the curl or wget of a one-shot `proxy` is set apart with `--` so its options reach it untouched
Stdio.Stdio.use(({ args }) =>
  Effect.flatMap(args, (args) => Command.runWith(cli, { version })(markOneShot(args)))
).pipe(
  Effect.provide(
    Layer.mergeAll(
      NodeServices.layer,
      StderrPresenter,
      CliFormatter,
      ConfigLocation.layer(homedir(), process.cwd()),
      layerStderrProgress(process.stderr)
    )
  ),
  NodeRuntime.runMain
)
