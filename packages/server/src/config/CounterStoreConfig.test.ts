import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { type ConfigError, loadConfig } from "./ConfigLoader.ts"

const load = (text: string, env: Readonly<Record<string, string>> = {}) =>
  Effect.acquireUseRelease(
    Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-config-cs-"))),
    (dir) =>
      Effect.flatMap(
        Effect.promise(() => fs.writeFile(path.join(dir, "svc.yaml"), text)),
        () =>
          Effect.map(Effect.exit(loadConfig({ configPath: path.join(dir, "svc.yaml"), cwd: dir, env })), (exit) => ({
            dir,
            exit
          }))
      ),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

const problemsOf = (exit: Exit.Exit<unknown, ConfigError>): ReadonlyArray<string> => {
  if (Exit.isSuccess(exit)) return assert.fail("expected the configuration to be rejected")
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  return error?._tag === "Fail" ? error.error.problems : assert.fail("expected a ConfigError")
}

describe("counter_store configuration", () => {
  it.effect("redis-cluster: seed nodes, the URL's scheme and credentials, TLS files beside the file", () =>
    Effect.gen(function* () {
      const { dir, exit } = yield* load(
        [
          "counter_store:",
          "  provider: redis-cluster",
          "  url: 'rediss://svc:s3cret@ignored:1'",
          "  nodes: ['10.0.0.1:7000', 'redis-b.internal:7001', '[::1]:7002']",
          "  key_prefix: 'prod:'",
          "  tls: { ca: tls/ca.crt, cert: tls/svc.crt, key: tls/svc.key }"
        ].join("\n")
      )
      if (Exit.isFailure(exit)) return assert.fail(problemsOf(exit).join("; "))
      assert.deepStrictEqual(exit.value.counterStore, {
        provider: "redis-cluster",
        url: "rediss://svc:s3cret@ignored:1",
        nodes: [
          { host: "10.0.0.1", port: 7000 },
          { host: "redis-b.internal", port: 7001 },
          { host: "::1", port: 7002 }
        ],
        keyPrefix: "prod:",
        tls: {
          ca: path.join(dir, "tls/ca.crt"),
          cert: path.join(dir, "tls/svc.crt"),
          key: path.join(dir, "tls/svc.key")
        }
      })
    })
  )

  it.effect("redis-cluster without a URL uses plain redis:// with no credentials; redis takes tls too", () =>
    Effect.gen(function* () {
      const cluster = (yield* load("counter_store: { provider: redis-cluster, nodes: ['127.0.0.1:7000'] }")).exit
      if (Exit.isFailure(cluster)) return assert.fail(problemsOf(cluster).join("; "))
      assert.deepStrictEqual(cluster.value.counterStore, {
        provider: "redis-cluster",
        url: "redis://",
        nodes: [{ host: "127.0.0.1", port: 7000 }],
        keyPrefix: "svc:"
      })
      const { exit } = yield* load(
        "counter_store: { provider: redis, url: 'rediss://r:6380', tls: { ca: /etc/ca.pem } }"
      )
      if (Exit.isFailure(exit)) return assert.fail(problemsOf(exit).join("; "))
      assert.deepStrictEqual(exit.value.counterStore, {
        provider: "redis",
        url: "rediss://r:6380",
        keyPrefix: "svc:",
        tls: { ca: "/etc/ca.pem" }
      })
    })
  )

  it.effect("the seed nodes and the URL can come from the environment", () =>
    Effect.gen(function* () {
      const { exit } = yield* load("log: { level: info }", {
        SVC__counter_store__provider: "redis-cluster",
        SVC__counter_store__nodes: "[10.0.1.11:6379, 10.0.1.12:6379]",
        SVC__counter_store__url: "rediss://:s3cret@cluster"
      })
      if (Exit.isFailure(exit)) return assert.fail(problemsOf(exit).join("; "))
      const config = exit.value
      assert.deepStrictEqual(config.counterStore, {
        provider: "redis-cluster",
        url: "rediss://:s3cret@cluster",
        nodes: [
          { host: "10.0.1.11", port: 6379 },
          { host: "10.0.1.12", port: 6379 }
        ],
        keyPrefix: "svc:"
      })
    })
  )

  it.effect("each mistake is one problem naming its key, never the password", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["counter_store: { provider: redis-cluster }", "counter_store.nodes: required for provider redis-cluster"],
        [
          "counter_store: { provider: redis-cluster, nodes: [] }",
          "counter_store.nodes: required for provider redis-cluster"
        ],
        ["counter_store: { provider: redis-cluster, nodes: ['redis-a'] }", "counter_store.nodes[0]: must be host:port"],
        [
          "counter_store: { provider: redis-cluster, nodes: ['a:1', 'b:99999'] }",
          "counter_store.nodes[1]: must be host:port"
        ],
        [
          "counter_store: { provider: redis, url: 'redis://h:1', nodes: ['a:1'] }",
          "counter_store.nodes: only for provider redis-cluster"
        ],
        ["counter_store: { provider: memory, nodes: ['a:1'] }", "counter_store.nodes: only for provider redis-cluster"],
        [
          "counter_store: { provider: redis, url: 'redis://:hunter2@h:1', tls: { ca: ca.pem } }",
          "counter_store.tls: requires a rediss:// counter_store.url"
        ],
        [
          "counter_store: { provider: redis-cluster, nodes: ['a:1'], tls: { ca: ca.pem } }",
          "counter_store.tls: requires a rediss:// counter_store.url"
        ],
        [
          "counter_store: { provider: redis, url: 'rediss://h:1', tls: { ca: ca.pem, cert: c.pem } }",
          "counter_store.tls: cert and key go together"
        ],
        [
          "counter_store: { provider: redis, url: 'rediss://h:1', tls: { cert: c.pem } }",
          "counter_store.tls.ca: Missing key"
        ],
        [
          "counter_store: { provider: redis, url: 'http://:hunter2@h:1' }",
          "counter_store.url: must be a redis:// or rediss:// URL"
        ],
        [
          "counter_store: { provider: redis-cluster, nodes: ['a:1'], key_prefix: '{svc}:' }",
          "counter_store.key_prefix: must not contain { or } with provider redis-cluster"
        ],
        ["counter_store: { provider: redis-sentinel, url: 'redis://h:1' }", "counter_store.provider"]
      ]
      for (const [text, expected] of cases) {
        const problems = problemsOf((yield* load(text)).exit)
        assert.isTrue(
          problems.some((p) => p.startsWith(expected)),
          `${text} → ${JSON.stringify(problems)} should mention ${expected}`
        )
        for (const problem of problems) assert.notInclude(problem, "hunter2")
      }
    })
  )
})
