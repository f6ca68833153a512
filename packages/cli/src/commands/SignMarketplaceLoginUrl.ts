/**
 * `cli sign-marketplace-login-url` (spec 4.8, 5.9): prints one signed marketplace login URL on stdout.
 */
import { Console, Effect } from "effect"
import { CliError, Command } from "effect/cli"
import { loadCliConfig } from "../CliConfig.ts"
import {
  makeLoginUrlSigner,
  marketplaceLoginFlagErrors,
  marketplaceLoginFlags,
  resolveMarketplaceLoginPlan
} from "../MarketplaceLogin.ts"
import { root } from "../Root.ts"

/** `sign-marketplace-login-url`: resolves flags and config, signs a login token and prints the URL. */
export const signMarketplaceLoginUrl = Command.make(
  "sign-marketplace-login-url",
  marketplaceLoginFlags,
  Effect.fn("SignMarketplaceLoginUrl")(function* (flags) {
    const { config } = yield* root
    const loaded = yield* loadCliConfig(config)
    const plan = yield* Effect.fromResult(resolveMarketplaceLoginPlan(flags, loaded))
    const signer = yield* makeLoginUrlSigner(plan)
    yield* Console.log(yield* signer.sign(plan.returnTo))
  })
).pipe(
  Command.validate((flags) => {
    const errors = marketplaceLoginFlagErrors(flags)
    return errors.length === 0
      ? Effect.void
      : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
  }),
  Command.withDescription(
    "Print a signed marketplace login URL (public service /marketplace/login, token valid 5m, single-use nonce)"
  ),
  Command.withExamples([
    { command: "cli sign-marketplace-login-url", description: "Login URL for the configured admin_username" },
    {
      command:
        "cli sign-marketplace-login-url --actorId user-42 --returnTo https://app.example.com/integrations " +
        "--marketplaceUrl https://public.example.com --privateKeyPath key.pem",
      description: "Login URL for one actor, returning to the host application"
    }
  ])
)
