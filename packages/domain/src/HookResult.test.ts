import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { decodeHookResult, hookConfigMaxKeys, hookMetadataMaxChars, hookNotificationsMax } from "./HookResult.ts"

const problems = (output: unknown) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(decodeHookResult(output))
    if (Exit.isSuccess(exit)) return assert.fail(`expected problems for ${JSON.stringify(output)}`)
    const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
    assert.isDefined(error)
    return error ?? []
  })

const notice = { key: "quota.low", level: "warning", title: "Quota low" } as const

describe("HookResult (spec 2.10)", () => {
  it.effect("every section is optional; each accepts its spec shape", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* decodeHookResult({}), {})
      const full = {
        config: { set: { s: "a", n: 1.5, b: false, arr: [1, "x", null], obj: { deep: { x: 1 } } }, unset: ["old"] },
        labels: { set: { tier: "gold", "example.com/team": "a-b_c.d" }, unset: ["legacy"] },
        annotations: { set: { "example.com/note": "any text, even spaces!" }, unset: ["gone"] },
        notifications: {
          set: [{ ...notice, message: "m", action_url: "https://example.com/x", metadata: { a: [1] } }],
          unset: [{ key: "quota.old" }]
        }
      }
      assert.deepStrictEqual(yield* decodeHookResult(full), full)
    })
  )

  it.effect("label rules apply and svc/ keys are refused, in set and unset", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* problems({ labels: { set: { "svc/cxn/tier": "a" } } }), [
        { field: "output.labels.set.svc/cxn/tier", message: "the svc/ prefix is reserved for system labels" }
      ])
      assert.deepStrictEqual(yield* problems({ labels: { set: { tier: "has space" } } }), [
        { field: "output.labels.set.tier", message: "a label value may contain only alphanumerics, '-', '_' and '.'" }
      ])
      assert.deepStrictEqual(yield* problems({ annotations: { unset: ["svc/x"] } }), [
        { field: "output.annotations.unset[0]", message: "the svc/ prefix is reserved for system labels" }
      ])
      assert.deepStrictEqual(yield* problems({ labels: { set: { a: "1" }, unset: ["a"] } }), [
        { field: "output.labels.unset[0]", message: "a key cannot be both set and unset" }
      ])
      const big = { "example.com/big": "x".repeat(256 * 1024) }
      assert.deepStrictEqual(yield* problems({ annotations: { set: big } }), [
        { field: "output.annotations.set", message: "annotations are limited to 262144 bytes per resource" }
      ])
    })
  )

  it.effect("built-in svc. notification keys are refused; keys are unique; caps hold", () =>
    Effect.gen(function* () {
      const reserved = "notification keys starting with 'svc.' are reserved for the service's own notices"
      assert.deepStrictEqual(yield* problems({ notifications: { set: [{ ...notice, key: "svc.reauth" }] } }), [
        { field: "output.notifications.set[0].key", message: reserved }
      ])
      assert.deepStrictEqual(yield* problems({ notifications: { unset: [{ key: "svc.setup" }] } }), [
        { field: "output.notifications.unset[0].key", message: reserved }
      ])
      assert.deepStrictEqual(yield* problems({ notifications: { set: [notice, notice] } }), [
        { field: "output.notifications.set[1].key", message: "the notification key appears twice" }
      ])
      assert.deepStrictEqual(yield* problems({ notifications: { set: [notice], unset: [{ key: notice.key }] } }), [
        { field: "output.notifications.unset[0].key", message: "a key cannot be both set and unset" }
      ])
      const many = Array.from({ length: hookNotificationsMax + 1 }, (_, i) => ({ ...notice, key: `k${i}` }))
      assert.lengthOf(yield* problems({ notifications: { set: many } }), 1)
      const metadata = { blob: "x".repeat(hookMetadataMaxChars) }
      assert.deepStrictEqual(yield* problems({ notifications: { set: [{ ...notice, metadata }] } }), [
        {
          field: "output.notifications.set[0].metadata",
          message: `metadata is at most ${hookMetadataMaxChars} characters of JSON`
        }
      ])
      assert.lengthOf(yield* problems({ notifications: { set: [{ ...notice, level: "critical" }] } }), 1)
    })
  )

  it.effect("config values are JSON; keys are capped; unknown sections and keys are refused", () =>
    Effect.gen(function* () {
      const keys = Object.fromEntries(Array.from({ length: hookConfigMaxKeys + 1 }, (_, i) => [`k${i}`, i]))
      assert.deepStrictEqual(yield* problems({ config: { set: keys } }), [
        { field: "output.config", message: `at most ${hookConfigMaxKeys} keys may be set and unset in total` }
      ])
      assert.lengthOf(yield* problems({ config: { set: { "": 1 } } }), 1)
      assert.lengthOf(yield* problems({ confg: {} }), 1)
      assert.lengthOf(yield* problems({ config: { sett: {} } }), 1)
      assert.lengthOf(yield* problems(42), 1)
      assert.lengthOf(yield* problems(null), 1)
    })
  )

  it.effect("problems never echo the offending values", () =>
    Effect.gen(function* () {
      const secret = "sk_live_SECRET value!"
      const found = yield* problems({ labels: { set: { token: secret } }, config: { set: { x: 1 }, unset: [7] } })
      for (const detail of found) assert.notInclude(detail.message, "SECRET")
    })
  )

  it.effect("__proto__, constructor and prototype keys are refused wherever the result is merged", () =>
    Effect.gen(function* () {
      const message = "__proto__, constructor and prototype are not allowed as keys"
      // As the sandbox's output arrives: JSON.parse makes `__proto__` an own key.
      const polluted = JSON.parse('{"config":{"set":{"__proto__":{"polluted":true}}}}')
      assert.deepStrictEqual(yield* problems(polluted), [{ field: "output.config.set.__proto__", message }])
      for (const key of ["constructor", "prototype"]) {
        assert.deepStrictEqual(yield* problems({ config: { set: { [key]: 1 } } }), [
          { field: `output.config.set.${key}`, message }
        ])
        assert.deepStrictEqual(yield* problems({ config: { unset: [key] } }), [
          { field: "output.config.unset[0]", message }
        ])
        assert.deepStrictEqual(yield* problems({ labels: { set: { [key]: "a" } } }), [
          { field: `output.labels.set.${key}`, message }
        ])
        assert.deepStrictEqual(yield* problems({ annotations: { set: { [key]: "a" } } }), [
          { field: `output.annotations.set.${key}`, message }
        ])
        assert.deepStrictEqual(yield* problems({ labels: { unset: [key] } }), [
          { field: "output.labels.unset[0]", message }
        ])
      }
      assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
    })
  )

  it.effect("a notification's action_url is http(s) or a path starting with a single /", () =>
    Effect.gen(function* () {
      const message = "an action_url is an absolute http: or https: URL, or a path starting with a single /"
      for (const url of [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox",
        "//evil.example/x",
        "/\\evil.example/x",
        "/\t/evil.example/x",
        "connections/1",
        "mailto:a@example.com",
        ""
      ]) {
        assert.deepStrictEqual(
          yield* problems({ notifications: { set: [{ ...notice, action_url: url }] } }),
          [{ field: "output.notifications.set[0].action_url", message }],
          JSON.stringify(url)
        )
      }
      for (const url of [
        "https://example.com/x?a=1",
        "http://127.0.0.1:8080/",
        "/connections/cxn_1?action=configure"
      ]) {
        const decoded = yield* decodeHookResult({ notifications: { set: [{ ...notice, action_url: url }] } })
        assert.strictEqual(decoded.notifications?.set?.[0]?.action_url, url)
      }
    })
  )
})
