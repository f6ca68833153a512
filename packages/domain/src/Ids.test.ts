import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { ActorId, ConnectionId, idFromBytes, makeId, TaskId } from "./Ids.ts"

describe("Ids", () => {
  it("encodes 16 bytes as 26 lowercase base32 characters after the prefix", () => {
    assert.strictEqual(idFromBytes("act", new Uint8Array(16)), "act_aaaaaaaaaaaaaaaaaaaaaaaaaa")
    assert.strictEqual(idFromBytes("cxn", new Uint8Array(16).fill(255)), "cxn_77777777777777777777777774")
    assert.strictEqual(
      idFromBytes(
        "rl",
        Uint8Array.from({ length: 16 }, (_, i) => i)
      ),
      "rl_aaaqeayeaudaocajbifqydiob4"
    )
    assert.throws(() => idFromBytes("act", new Uint8Array(15)))
  })

  it("makes distinct random ids that their schema accepts", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => makeId("act")))
    assert.strictEqual(ids.size, 1000)
    for (const id of ids) assert.isTrue(Schema.is(ActorId)(id))
    assert.match(makeId("req"), /^req_[a-z2-7]{26}$/)
  })

  it("schemas check the prefix and the shape", () => {
    const isActor = Schema.is(ActorId)
    assert.isFalse(isActor(makeId("cxn")))
    assert.isFalse(isActor("act_short"))
    assert.isFalse(isActor("act_AAAAAAAAAAAAAAAAAAAAAAAAAA"))
    assert.isTrue(Schema.is(ConnectionId)(makeId("cxn")))
    assert.isTrue(Schema.is(TaskId)("tsk_opaque-Token_123"))
    assert.isFalse(Schema.is(TaskId)("act_opaque"))
  })
})
