import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  actionUrlProblem,
  isBuiltInKey,
  MarkViewed,
  storedActionUrl,
  NotificationInput,
  reauthNotice,
  setupNotice,
  severityRule
} from "./Notification.ts"

describe("built-in notices (spec 2.11)", () => {
  it("re-authentication and setup point at the connection with their action", () => {
    assert.deepStrictEqual(reauthNotice("cxn_a"), {
      key: "svc.reauth",
      level: "warning",
      title: "Re-authentication required",
      message: "This connection needs to be authorised again before it can be used.",
      action_url: "/connections/cxn_a?action=reauth",
      metadata: {}
    })
    assert.strictEqual(setupNotice("cxn_a").key, "svc.setup")
    assert.strictEqual(setupNotice("cxn_a").action_url, "/connections/cxn_a?action=configure")
    assert.isTrue(Schema.is(NotificationInput)(reauthNotice("cxn_a")))
    assert.isTrue(isBuiltInKey("svc.setup"))
    assert.isFalse(isBuiltInKey("connector.svc"))
  })

  it("re-authentication supersedes setup; setup is blocked by re-authentication; other keys are free", () => {
    assert.deepStrictEqual(severityRule("svc.reauth"), { supersedes: ["svc.setup"], blockedBy: [] })
    assert.deepStrictEqual(severityRule("svc.setup"), { supersedes: [], blockedBy: ["svc.reauth"] })
    assert.deepStrictEqual(severityRule("quota.low"), { supersedes: [], blockedBy: [] })
  })
})

describe("notification schemas", () => {
  it("a notice needs a valid key, level and title", () => {
    const valid = Schema.is(NotificationInput)
    assert.isTrue(valid({ key: "quota.low", level: "error", title: "t", message: "" }))
    assert.isFalse(valid({ key: ".bad", level: "error", title: "t", message: "" }))
    assert.isFalse(valid({ key: "k", level: "critical", title: "t", message: "" }))
    assert.isFalse(valid({ key: "k", level: "info", title: "", message: "" }))
  })

  it("a bulk viewed body holds 1 to 1000 ids", () => {
    const valid = Schema.is(MarkViewed)
    assert.isFalse(valid({ ids: [] }))
    assert.isTrue(valid({ ids: ["ntf_a"] }))
    assert.isTrue(valid({ ids: Array.from({ length: 1000 }, (_, i) => `ntf_${i}`) }))
    assert.isFalse(valid({ ids: Array.from({ length: 1001 }, (_, i) => `ntf_${i}`) }))
  })
})

describe("action_url (SECURITY.md: data handed to browsers is inert)", () => {
  it("http(s) URLs and single-slash paths pass; scripts, other schemes and protocol-relative URLs do not", () => {
    for (const url of ["https://example.com/a?b=c", "http://localhost:3000/", "/connections/cxn_1?action=reauth"]) {
      assert.isUndefined(actionUrlProblem(url), url)
      assert.strictEqual(storedActionUrl(url), url)
    }
    for (const url of ["javascript:alert(1)", "data:text/html,x", "//evil.example", "/\\evil.example", "x y", ""]) {
      assert.isDefined(actionUrlProblem(url), url)
      assert.isNull(storedActionUrl(url))
    }
    assert.isNull(storedActionUrl(null))
    assert.isFalse(Schema.is(NotificationInput)({ ...reauthNotice("cxn_1"), action_url: "javascript:alert(1)" }))
    assert.isTrue(Schema.is(NotificationInput)(reauthNotice("cxn_1")))
  })
})
