import { Command, Flag } from "effect/cli"

/** `--config <path>`: accepted before or after the subcommand name by every command. */
export const configFlag = Flag.String("config").pipe(
  Flag.withMetavar("PATH"),
  Flag.withDescription("Configuration file to read instead of ~/.svc.yaml (must exist)"),
  Flag.optional
)

/** The `cli` root command with its shared flags; subcommands read them with `yield* root`. */
export const root = Command.make("cli").pipe(
  Command.withSharedFlags({ config: configFlag }),
  Command.withDescription("Companion tool for a running svc service (spec 4.8)"),
  Command.withExamples([
    { command: "cli list connections -o table", description: "Connections of the svc running in this directory" },
    { command: "cli tasks get tsk_abc123 --wait", description: "Follow a disconnect-all or archive to its end" },
    { command: "cli events tail --statusCodeRange 500-599", description: "Follow failed proxied requests" },
    { command: "cli sign-jwt --admin --expires-in 12h", description: "An admin token for curl" },
    { command: "cli signing-proxy", description: "Call the api without a token at http://127.0.0.1:8888" },
    {
      command: "cli proxy --connection cxn_123 curl -s https://api.example.com/v1/me",
      description: "Run one curl through a connection"
    }
  ])
)
