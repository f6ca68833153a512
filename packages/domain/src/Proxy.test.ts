import { assert, describe, it } from "@effect/vitest"
import { LabelConflict, labelSnapshot, resourceLabelSnapshot } from "./Proxy.ts"

const connection = { tier: "free", "svc/ns/team": "core", "svc/cxn/-/id": "cxn_1" }
const actor = { id: "act_1", name: "alice", namespace: "root", labels: { tier: "gold", "svc/ns/x": "y" } }

describe("labelSnapshot (spec 2.5; SECURITY.md: resource labels win)", () => {
  it("composes the connection's labels, the actor's under svc/act/ and the request's", () => {
    assert.deepStrictEqual(labelSnapshot(connection, actor, { feature: "sync" }), {
      ...connection,
      "svc/act/tier": "gold",
      "svc/act/-/id": "act_1",
      "svc/act/-/name": "alice",
      "svc/act/-/ns": "root",
      feature: "sync"
    })
  })

  it("refuses a request label that contradicts the connection's, naming the key", () => {
    const snapshot = labelSnapshot(connection, actor, { feature: "sync", tier: "premium" })
    assert.instanceOf(snapshot, LabelConflict)
    assert.strictEqual((snapshot as LabelConflict).key, "tier")
    assert.instanceOf(labelSnapshot(connection, undefined, { tier: "premium" }), LabelConflict)
  })

  it("keeps a request label repeating the connection's value", () => {
    assert.deepStrictEqual(labelSnapshot(connection, undefined, { tier: "free", team: "a" }), {
      ...connection,
      team: "a"
    })
  })

  it("never lets a request label write under svc/, nor read the prototype as a label", () => {
    assert.deepStrictEqual(labelSnapshot(connection, undefined, { "svc/cxn/-/id": "cxn_2", constructor: "x" }), {
      ...connection,
      constructor: "x"
    })
  })

  it("the resource side alone is what a probe records", () => {
    assert.deepStrictEqual(resourceLabelSnapshot(connection, undefined), connection)
  })
})
