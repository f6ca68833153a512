/**
 * Progress reports on stderr (never stdout, which carries only command output): one line
 * rewritten in place on a terminal, otherwise one line per change so logs stay readable.
 */
import { Console, Context, Effect, Layer } from "effect"

/** Where progress goes: a terminal rewrites one line, anything else gets whole lines (default: `Console.error`). */
export const ProgressSink = Context.Reference<{
  readonly terminal: boolean
  readonly write: (text: string) => Effect.Effect<void>
}>("@svc/cli/Progress/ProgressSink", {
  defaultValue: () => ({ terminal: false, write: (text) => Console.error(text.replace(/\n$/, "")) })
})

/** Progress on the process's stderr; `main.ts` provides it (the only place touching `process`). */
export const layerStderrProgress = (stderr: { readonly isTTY?: boolean; write(text: string): unknown }) =>
  Layer.succeed(ProgressSink, {
    terminal: stderr.isTTY === true,
    write: (text) =>
      Effect.sync(() => {
        stderr.write(text)
      })
  })

/** One progress line: `update` shows the current state, `finish` ends it (optionally with a last line). */
export interface ProgressLine {
  readonly update: (text: string) => Effect.Effect<void>
  readonly finish: (text?: string) => Effect.Effect<void>
}

const clearLine = "\r\x1b[2K"

/** A progress line on the sink; repeated identical updates are written once. */
export const progressLine = Effect.gen(function* () {
  const sink = yield* ProgressSink
  let last: string | undefined
  let open = false
  const update = (text: string) =>
    Effect.suspend(() => {
      if (text === last) return Effect.void
      last = text
      if (!sink.terminal) return sink.write(`${text}\n`)
      open = true
      return sink.write(`${clearLine}${text}`)
    })
  const finish = (text?: string) =>
    Effect.suspend(() => {
      const wasOpen = open
      const previous = last
      open = false
      last = undefined
      if (text !== undefined && text !== previous) return sink.write(`${sink.terminal ? clearLine : ""}${text}\n`)
      return wasOpen ? sink.write("\n") : Effect.void
    })
  return { update, finish } satisfies ProgressLine
})

/** `[#########-----------]  45/100` for `done` of `total` in `width` cells. */
export const progressBar = (done: number, total: number, width = 30): string => {
  const ratio = total <= 0 ? 0 : Math.min(1, Math.max(0, done / total))
  const filled = Math.round(ratio * width)
  const digits = String(total).length
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(done).padStart(digits)}/${total} ${Math.floor(ratio * 100)}%`
}
