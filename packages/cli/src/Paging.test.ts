import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { followPages, type PageOf } from "./Paging.ts"

/** A list of `total` numbers served in pages; records each request. */
const server = (total: number) => {
  const calls: Array<{ readonly cursor: string | undefined; readonly limit: number }> = []
  const fetch = (cursor: string | undefined, limit: number) =>
    Effect.sync((): PageOf<number> => {
      calls.push({ cursor, limit })
      const from = cursor === undefined ? 0 : Number(cursor)
      const items = Array.from({ length: Math.max(0, Math.min(limit, total - from)) }, (_, i) => from + i)
      const next = from + items.length
      return next < total ? { items, cursor: String(next) } : { items }
    })
  return { calls, fetch }
}

const run = (total: number, max: number | undefined, pageSize: number) =>
  Effect.gen(function* () {
    const { calls, fetch } = server(total)
    const seen: Array<number> = []
    const progress: Array<string> = []
    const done = yield* followPages({
      fetch,
      max,
      pageSize,
      onPage: (items, sofar) =>
        Effect.sync(() => {
          seen.push(...items)
          progress.push(`${sofar.pages}:${sofar.items}`)
        })
    })
    return { calls, seen, progress, done }
  })

describe("followPages", () => {
  it.effect("follows cursors to the last page, passing each cursor back", () =>
    Effect.gen(function* () {
      const { calls, seen, progress, done } = yield* run(7, undefined, 3)
      assert.deepStrictEqual(seen, [0, 1, 2, 3, 4, 5, 6])
      assert.deepStrictEqual(calls, [
        { cursor: undefined, limit: 3 },
        { cursor: "3", limit: 3 },
        { cursor: "6", limit: 3 }
      ])
      assert.deepStrictEqual(progress, ["1:3", "2:6", "3:7"])
      assert.deepStrictEqual(done, { pages: 3, items: 7 })
    })
  )

  it.effect("stops at max items and asks the last page only for what is still wanted", () =>
    Effect.gen(function* () {
      const { calls, seen, done } = yield* run(100, 5, 2)
      assert.deepStrictEqual(seen, [0, 1, 2, 3, 4])
      assert.deepStrictEqual(
        calls.map((call) => call.limit),
        [2, 2, 1]
      )
      assert.deepStrictEqual(done, { pages: 3, items: 5 })
    })
  )

  it.effect("one request for an empty list; the page size is clamped to 1..1000", () =>
    Effect.gen(function* () {
      const empty = yield* run(0, undefined, 50)
      assert.deepStrictEqual(empty.done, { pages: 1, items: 0 })
      const big = yield* run(3, undefined, 5000)
      assert.strictEqual(big.calls[0]?.limit, 1000)
    })
  )

  it.effect("never loops on a page that is empty but still has a cursor", () =>
    Effect.gen(function* () {
      let calls = 0
      const done = yield* followPages({
        fetch: () =>
          Effect.sync((): PageOf<number> => {
            calls += 1
            return { items: [], cursor: "again" }
          }),
        max: undefined,
        pageSize: 10,
        onPage: () => Effect.void
      })
      assert.strictEqual(calls, 1)
      assert.deepStrictEqual(done, { pages: 1, items: 0 })
    })
  )
})
