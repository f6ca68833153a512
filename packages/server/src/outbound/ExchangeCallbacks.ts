/**
 * How a plain upstream exchange reports (the proxy's fast path runs them as callbacks), and the
 * same exchange as an effect for everything else.
 */
import { Effect } from "effect"
import type { OutboundError } from "./OutboundError.ts"

/** Where a plain upstream exchange reports: its answer, or why there is none (exactly one is called). */
export interface ExchangeCallbacks<A> {
  readonly onAnswer: (answer: A) => void
  readonly onFailure: (error: OutboundError) => void
}

/**
 * The exchange `start` begins, as an effect that succeeds with its answer or fails with its
 * error; interrupting it calls the function `start` answered (abandon the exchange).
 */
export const exchangeEffect = <A>(
  start: (callbacks: ExchangeCallbacks<A>) => () => void
): Effect.Effect<A, OutboundError> =>
  Effect.callback<A, OutboundError>((resume) => {
    const abandon = start({
      onAnswer: (answer) => resume(Effect.succeed(answer)),
      onFailure: (error) => resume(Effect.fail(error))
    })
    return Effect.sync(abandon)
  })
