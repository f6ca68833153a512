/**
 * Process entry point of `cli`: the only place reading the process environment (home directory).
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import { homedir } from "node:os"
import { cli, StderrPresenter, version } from "./Cli.ts"
import { ConfigLocation } from "./CliConfig.ts"

Command.run(cli, { version }).pipe(
  Effect.provide(Layer.mergeAll(NodeServices.layer, StderrPresenter, ConfigLocation.layer(homedir()))),
  NodeRuntime.runMain
)
