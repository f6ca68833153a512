import { assert, describe, it } from "@effect/vitest"
import { provisionalCoolDownMillis } from "./CoolDown.ts"

describe("provisionalCoolDownMillis", () => {
  it("honours the upstream's Retry-After, capped at 15m", () => {
    assert.strictEqual(provisionalCoolDownMillis(1, 30_000), 30_000)
    assert.strictEqual(provisionalCoolDownMillis(7, 2_500), 2_500)
    assert.strictEqual(provisionalCoolDownMillis(1, 0), 0)
    assert.strictEqual(provisionalCoolDownMillis(1, 3_600_000), 900_000)
  })

  it("without Retry-After doubles from 1s per consecutive 429, capped at 5m", () => {
    assert.deepStrictEqual(
      [1, 2, 3, 4, 8, 9, 10, 100].map((n) => provisionalCoolDownMillis(n, undefined)),
      [1_000, 2_000, 4_000, 8_000, 128_000, 256_000, 300_000, 300_000]
    )
  })

  it("treats a count below one as the first 429", () => {
    assert.strictEqual(provisionalCoolDownMillis(0, undefined), 1_000)
  })
})
