import { Schema } from "effect"
import { CliError } from "effect/cli"

/** A user-facing failure of a `cli` command: rendered as its message on stderr, exit code 1. */
export class CliFailure extends Schema.TaggedError<CliFailure>()("CliFailure", {
  message: Schema.String
}) {
  override get [CliError.userMessage]() {
    return this.message
  }
}
