import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestConsole } from "effect/testing"
import { ProgressSink, progressBar, progressLine } from "./Progress.ts"

const recorded = (terminal: boolean) => {
  const written: Array<string> = []
  const sink = { terminal, write: (text: string) => Effect.sync(() => void written.push(text)) }
  return { written, provide: Effect.provideService(ProgressSink, sink) }
}

describe("progressBar", () => {
  it("fills in proportion to done/total", () => {
    assert.strictEqual(progressBar(0, 4, 8), "[--------] 0/4 0%")
    assert.strictEqual(progressBar(1, 4, 8), "[##------] 1/4 25%")
    assert.strictEqual(progressBar(4, 4, 8), "[########] 4/4 100%")
    assert.strictEqual(progressBar(7, 120, 10), "[#---------]   7/120 5%")
  })

  it("stays within its width for an unknown or overshooting total", () => {
    assert.strictEqual(progressBar(3, 0, 4), "[----] 3/0 0%")
    assert.strictEqual(progressBar(9, 4, 4), "[####] 9/4 100%")
  })
})

describe("progressLine", () => {
  it.effect("off a terminal: one whole line per change, repeats skipped", () => {
    const { written, provide } = recorded(false)
    return Effect.gen(function* () {
      const line = yield* progressLine
      yield* line.update("page 2")
      yield* line.update("page 2")
      yield* line.update("page 3")
      yield* line.finish("done")
      assert.deepStrictEqual(written, ["page 2\n", "page 3\n", "done\n"])
    }).pipe(provide)
  })

  it.effect("on a terminal: rewrites one line in place and ends it with a newline", () => {
    const { written, provide } = recorded(true)
    return Effect.gen(function* () {
      const line = yield* progressLine
      yield* line.update("a")
      yield* line.update("b")
      yield* line.finish()
      yield* line.finish()
      assert.deepStrictEqual(written, ["\r\x1b[2Ka", "\r\x1b[2Kb", "\n"])
    }).pipe(provide)
  })

  it.effect("by default writes whole lines to Console.error (stderr), never stdout", () =>
    Effect.gen(function* () {
      const line = yield* progressLine
      yield* line.update("listing: 200 so far")
      yield* line.finish("listed 250")
      assert.deepStrictEqual(yield* TestConsole.errorLines, ["listing: 200 so far", "listed 250"])
      assert.deepStrictEqual(yield* TestConsole.logLines, [])
    }).pipe(Effect.provide(TestConsole.layer))
  )
})
