import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { type ConfigError, loadConfig } from "./ConfigLoader.ts"

const withDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-config-"))),
    f,
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

const write = (dir: string, name: string, text: string) =>
  Effect.promise(() => fs.writeFile(path.join(dir, name), text)).pipe(Effect.as(path.join(dir, name)))

const problemsOf = (exit: Exit.Exit<unknown, ConfigError>): ReadonlyArray<string> => {
  if (Exit.isSuccess(exit)) return assert.fail("expected the configuration to be rejected")
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  return error?._tag === "Fail" ? error.error.problems : assert.fail("expected a ConfigError")
}

const example = path.join(import.meta.dirname, "../../../../docs/svc.example.yaml")

describe("ConfigLoader", () => {
  it.effect("the documented example configuration decodes; label maintenance intervals resolve", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(loadConfig({ configPath: example, cwd: path.dirname(example), env: {} }))
      if (Exit.isFailure(exit)) assert.fail(`docs/svc.example.yaml is rejected: ${problemsOf(exit).join("; ")}`)
      const config = exit.value
      assert.deepStrictEqual(config.labels, { consistencyCheckIntervalMs: 86_400_000, propagationPollIntervalMs: 1000 })
      const custom = yield* loadConfig({
        cwd: path.dirname(example),
        env: { SVC__labels__consistency_check_interval: "2s", SVC__labels__propagation_poll_interval: "10ms" }
      })
      assert.deepStrictEqual(custom.labels, { consistencyCheckIntervalMs: 2000, propagationPollIntervalMs: 50 })
      assert.deepStrictEqual(config.mcp, { idleTimeoutMs: 30 * 60_000, maxSessions: 10_000 })
      const sessions = yield* loadConfig({
        cwd: path.dirname(example),
        env: { SVC__mcp__session_idle_timeout: "90s", SVC__mcp__max_sessions: "5" }
      })
      assert.deepStrictEqual(sessions.mcp, { idleTimeoutMs: 90_000, maxSessions: 5 })
    })
  )

  it.effect("no file gives the embedded default", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const config = yield* loadConfig({ cwd: dir, env: {} })
        assert.strictEqual(config.source, "embedded default")
        assert.strictEqual(config.dataDir, path.join(dir, ".svc"))
        assert.deepStrictEqual(config.database, { provider: "pglite", path: path.join(dir, ".svc", "db") })
        assert.strictEqual(config.appMetricsDatabase, "main")
        assert.deepStrictEqual(config.counterStore, { provider: "memory" })
        assert.strictEqual(config.listeners.api.port, 8081)
        assert.strictEqual(config.listeners["admin-api"].port, 8082)
        assert.strictEqual(config.listeners.public.port, 8080)
        assert.isTrue(config.adminTls.selfSigned)
        assert.strictEqual(config.auth.signingKey.algorithm, "RS256")
        assert.isTrue("generated" in config.auth.signingKey)
        assert.deepStrictEqual(
          config.auth.actors.map((a) => a.external_id),
          ["admin"]
        )
        assert.strictEqual(config.appMetrics.fullRequestRecording, "never")
        assert.strictEqual(config.appMetrics.requestEventsRetentionMs, 30 * 24 * 60 * 60 * 1000)
        assert.strictEqual(config.appMetrics.resourceSnapshotsRetentionMs, 30 * 24 * 60 * 60 * 1000)
      })
    )
  )

  it.effect("./svc.yaml is picked up and the spec's keys decode", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        yield* write(
          dir,
          "svc.yaml",
          [
            "database: { provider: postgres, url: 'postgres://postgres@127.0.0.1:5432/svc' }",
            "encryption: { root_key: { path: keys/root.key } }",
            "counter_store: { provider: redis, url: 'redis://127.0.0.1:6379' }",
            "system_auth:",
            "  jwt_signing_key: { private_key: { path: keys/secret } }",
            "  actors:",
            "    - external_id: ops",
            "      permissions: [{ namespace: 'root.**', resources: ['*'], verbs: [get, list] }]",
            "appMetrics:",
            "  database: { provider: postgres, addresses: ['db:5432'], database: metrics, user: svc, password: 'p@ss' }",
            "  requestEvents: { fullRequestRecording: always, retention: 7d }",
            "  resourceSnapshots: { retention: 90d }",
            "host_application: { initiate_session_url: 'https://host.example/session' }",
            "telemetry: { enabled: false, exporter: { endpoint: { envVar: SVC_OTEL_ENDPOINT } } }"
          ].join("\n")
        )
        const config = yield* loadConfig({ cwd: dir, env: {} })
        assert.strictEqual(config.source, path.join(dir, "svc.yaml"))
        assert.deepStrictEqual(config.auth.signingKey, {
          algorithm: "HS256",
          secretPath: path.join(dir, "keys/secret")
        })
        assert.deepStrictEqual(config.appMetricsDatabase, {
          provider: "postgres",
          url: "postgres://svc:p%40ss@db:5432/metrics",
          directUrl: undefined,
          maxConnections: 10,
          ssl: { mode: "url" },
          preparedStatements: true
        })
        assert.deepStrictEqual(config.counterStore, {
          provider: "redis",
          url: "redis://127.0.0.1:6379",
          keyPrefix: "svc:"
        })
        assert.strictEqual(config.appMetrics.fullRequestRecording, "always")
        assert.strictEqual(config.appMetrics.requestEventsRetentionMs, 7 * 24 * 60 * 60 * 1000)
        assert.strictEqual(config.appMetrics.resourceSnapshotsRetentionMs, 90 * 24 * 60 * 60 * 1000)
        assert.deepStrictEqual(config.encryption.rootKey, { source: "file", path: path.join(dir, "keys/root.key") })
      })
    )
  )

  it.effect("the root key comes from a file, an environment variable or a value; PGlite generates one", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const load = (text: string) =>
          Effect.flatMap(write(dir, "keys.yaml", text), (file) => loadConfig({ configPath: file, cwd: dir, env: {} }))
        const postgres = "database: { provider: postgres, url: 'postgres://h/db' }\n"
        const fromFile = yield* load(`${postgres}encryption: { root_key: { path: secrets/root.key } }`)
        assert.deepStrictEqual(fromFile.encryption.rootKey, {
          source: "file",
          path: path.join(dir, "secrets/root.key")
        })
        const fromEnv = yield* load(`${postgres}encryption: { root_key: { env: SVC_ROOT_KEY } }`)
        assert.deepStrictEqual(fromEnv.encryption.rootKey, { source: "env", name: "SVC_ROOT_KEY" })
        const fromValue = yield* load(`${postgres}encryption: { root_key: { value: c2VjcmV0 } }`)
        const value = fromValue.encryption.rootKey
        assert.strictEqual(value.source, "value")
        assert.strictEqual(value.source === "value" ? Redacted.value(value.value) : undefined, "c2VjcmV0")
        assert.isFalse(JSON.stringify(value).includes("c2VjcmV0"), "the key value must stay redacted")
        const embedded = yield* loadConfig({ cwd: dir, env: {} })
        assert.deepStrictEqual(embedded.encryption, {
          rootKey: { source: "generated", path: path.join(dir, ".svc", "root.key") },
          reencryptPollIntervalMs: 1000
        })
        const pglite = yield* load("data_dir: state\ndatabase: { provider: pglite }")
        assert.deepStrictEqual(pglite.encryption.rootKey, {
          source: "generated",
          path: path.join(dir, "state", "root.key")
        })
      })
    )
  )

  it.effect("PostgreSQL without a root key, or with several sources, is refused", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const problems = (text: string) =>
          Effect.flatMap(write(dir, "bad.yaml", text), (file) =>
            Effect.map(Effect.exit(loadConfig({ configPath: file, cwd: dir, env: {} })), problemsOf)
          )
        const postgres = "database: { provider: postgres, url: 'postgres://h/db' }\n"
        assert.deepStrictEqual(yield* problems(postgres), [
          "encryption.root_key: is required when the database is PostgreSQL (production refuses to run without a durable root key)"
        ])
        assert.deepStrictEqual(yield* problems(`${postgres}encryption: { root_key: { path: a, value: hunter2 } }`), [
          "encryption.root_key: set exactly one of path, env or value"
        ])
        assert.deepStrictEqual(yield* problems(`${postgres}encryption: { root_key: {} }`), [
          "encryption.root_key: set exactly one of path, env or value",
          "encryption.root_key: is required when the database is PostgreSQL (production refuses to run without a durable root key)"
        ])
        assert.deepStrictEqual(yield* problems("encryption: { root_key: { env: 'NOT A NAME' } }"), [
          "encryption.root_key.env: must be an environment variable name"
        ])
        assert.deepStrictEqual(yield* problems("encryption: { reencrypt_poll_interval: 10ms }"), [
          "encryption.reencrypt_poll_interval: must be at least 50ms"
        ])
        assert.deepStrictEqual(yield* problems("probes: { poll_interval: 1ms, max_concurrency: 257 }"), [
          "probes.max_concurrency: expected a value between 1 and 256"
        ])
        assert.deepStrictEqual(yield* problems("probes: { poll_interval: 1ms }"), [
          "probes.poll_interval: must be at least 50ms"
        ])
        assert.deepStrictEqual(yield* problems("rate_limits: { refresh_interval: 4s }"), [
          "rate_limits.refresh_interval: must be at least 5000ms"
        ])
        assert.deepStrictEqual(yield* problems("mcp: { session_idle_timeout: 500ms }"), [
          "mcp.session_idle_timeout: must be at least 1000ms"
        ])
        assert.deepStrictEqual(yield* problems("mcp: { max_sessions: 0 }"), [
          "mcp.max_sessions: expected a value greater than 0"
        ])
      })
    )
  )

  it.effect("a pooler and TLS: prepared_statements, direct_url and ssl {ca, cert, key} resolve; ssl true stays", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const rootKey = "encryption: { root_key: { value: AAAA } }\n"
        const file = yield* write(
          dir,
          "svc.yaml",
          [
            "database:",
            "  provider: postgres",
            "  url: 'postgres://svc@pgbouncer:6432/svc'",
            "  direct_url: 'postgres://svc@db:5432/svc'",
            "  prepared_statements: false",
            "  ssl: { ca: certs/ca.pem, cert: certs/client.pem, key: certs/client.key }",
            "appMetrics:",
            "  database: { provider: postgres, url: 'postgres://svc@db:5432/metrics?sslmode=verify-full', ssl: true }",
            rootKey
          ].join("\n")
        )
        const config = yield* loadConfig({ configPath: file, cwd: "/", env: {} })
        assert.deepStrictEqual(config.database, {
          provider: "postgres",
          url: "postgres://svc@pgbouncer:6432/svc",
          directUrl: "postgres://svc@db:5432/svc",
          maxConnections: 10,
          ssl: {
            mode: "verified",
            caPath: path.join(dir, "certs/ca.pem"),
            certPath: path.join(dir, "certs/client.pem"),
            keyPath: path.join(dir, "certs/client.key")
          },
          preparedStatements: false
        })
        assert.deepStrictEqual(config.appMetricsDatabase, {
          provider: "postgres",
          url: "postgres://svc@db:5432/metrics?sslmode=verify-full",
          directUrl: undefined,
          maxConnections: 10,
          ssl: { mode: "verified" },
          preparedStatements: true
        })
        const bad = (text: string) =>
          Effect.flatMap(write(dir, "bad.yaml", `${text}\n${rootKey}`), (path) =>
            Effect.map(Effect.exit(loadConfig({ configPath: path, cwd: dir, env: {} })), problemsOf)
          )
        assert.deepStrictEqual(
          yield* bad("database: { provider: postgres, url: 'postgres://h/db', ssl: { ca: a.pem, cert: c.pem } }"),
          ["database.ssl: `cert` and `key` go together (a client certificate needs its key)"]
        )
        assert.deepStrictEqual(yield* bad("database: { provider: pglite, direct_url: 'postgres://h/db' }"), [
          "database.direct_url: only for provider postgres"
        ])
        const typo = yield* bad("database: { provider: postgres, url: 'postgres://h/db', prepared_statements: nope }")
        assert.isTrue(
          typo.some((p) => p.startsWith("database.prepared_statements")),
          JSON.stringify(typo)
        )
      })
    )
  )

  it.effect("outbound and probe settings resolve with their defaults", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const defaults = yield* loadConfig({ cwd: dir, env: {} })
        assert.deepStrictEqual(defaults.outbound, { allowPrivateNetworks: false, maxResponseHeaderBytes: 16 * 1024 })
        assert.deepStrictEqual(defaults.probes, { pollIntervalMs: 1000, maxConcurrency: 8 })
        const custom = yield* loadConfig({
          cwd: dir,
          env: {
            SVC__outbound__allow_private_networks: "true",
            SVC__outbound__max_response_header_bytes: "32768",
            SVC__probes__poll_interval: "250ms",
            SVC__probes__max_concurrency: "32",
            SVC__encryption__reencrypt_poll_interval: "2s"
          }
        })
        assert.deepStrictEqual(custom.outbound, { allowPrivateNetworks: true, maxResponseHeaderBytes: 32768 })
        assert.deepStrictEqual(custom.probes, { pollIntervalMs: 250, maxConcurrency: 32 })
        assert.strictEqual(custom.encryption.reencryptPollIntervalMs, 2000)
      })
    )
  )

  it.effect("migration hooks: 5s, 32 MiB heap, 1 MiB stack, up to 4 threads by default; each key has its range", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const defaults = yield* loadConfig({ cwd: dir, env: {} })
        assert.deepStrictEqual(defaults.migrations, {
          hookTimeoutMs: 5000,
          hookMemoryBytes: 32 * 1024 * 1024,
          hookStackBytes: 1024 * 1024,
          hookWorkers: Math.min(4, Math.max(1, os.availableParallelism()))
        })
        const custom = yield* loadConfig({
          cwd: dir,
          env: {
            SVC__migrations__hook_timeout: "250ms",
            SVC__migrations__hook_memory_bytes: "8388608",
            SVC__migrations__hook_stack_bytes: "262144",
            SVC__migrations__hook_workers: "2"
          }
        })
        assert.deepStrictEqual(custom.migrations, {
          hookTimeoutMs: 250,
          hookMemoryBytes: 8 * 1024 * 1024,
          hookStackBytes: 256 * 1024,
          hookWorkers: 2
        })
        for (const [key, value, problem] of [
          ["hook_timeout", "5ms", "migrations.hook_timeout: must be at least 10ms"],
          ["hook_timeout", "2m", "migrations.hook_timeout: must be at most 60s"],
          ["hook_memory_bytes", "1000", "hook_memory_bytes"],
          ["hook_memory_bytes", "1073741824", "hook_memory_bytes"],
          ["hook_stack_bytes", "1024", "hook_stack_bytes"],
          ["hook_workers", "0", "hook_workers"],
          ["hook_workers", "33", "hook_workers"]
        ] as const) {
          const failed = yield* Effect.flip(loadConfig({ cwd: dir, env: { [`SVC__migrations__${key}`]: value } }))
          assert.include(String(failed.message ?? failed), problem)
        }
      })
    )
  )

  it.effect("rate-limit rules reload every 5m by default, at most every 5s (spec 4.6 rule 6)", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const defaults = yield* loadConfig({ cwd: dir, env: {} })
        assert.deepStrictEqual(defaults.rateLimits, { refreshIntervalMs: 300_000 })
        const custom = yield* loadConfig({ cwd: dir, env: { SVC__rate_limits__refresh_interval: "5s" } })
        assert.deepStrictEqual(custom.rateLimits, { refreshIntervalMs: 5000 })
      })
    )
  )

  it.effect(
    "cluster.tls paths resolve from the file's directory; on PostgreSQL a non-loopback runner host needs cluster.tls",
    () =>
      withDir((dir) =>
        Effect.gen(function* () {
          const base =
            "database: { provider: postgres, url: 'postgres://h/db' }\nencryption: { root_key: { value: c2VjcmV0 } }\n"
          const load = (text: string, env: Record<string, string> = {}) =>
            Effect.flatMap(write(dir, "cluster.yaml", `${base}${text}`), (file) =>
              Effect.exit(loadConfig({ configPath: file, cwd: dir, env }))
            )
          const withTls = yield* load(
            "cluster: { runner: { host: 0.0.0.0, advertised_host: 10.0.0.7 }, tls: { ca: certs/ca.pem, cert: certs/runner.pem, key: /etc/svc/runner-key.pem } }"
          )
          if (Exit.isFailure(withTls)) return assert.fail(`refused: ${problemsOf(withTls).join("; ")}`)
          assert.deepStrictEqual(withTls.value.cluster.tls, {
            caPath: path.join(dir, "certs/ca.pem"),
            certPath: path.join(dir, "certs/runner.pem"),
            keyPath: "/etc/svc/runner-key.pem"
          })
          const problem =
            "cluster.runner.host: 0.0.0.0 is not a loopback address; a runner reachable from other hosts needs cluster.tls (mutual TLS, see docs/cluster.md)"
          assert.deepStrictEqual(
            problemsOf(yield* load("cluster: { runner: { host: 0.0.0.0, advertised_host: 10.0.0.7 } }")),
            [problem]
          )
          assert.deepStrictEqual(problemsOf(yield* load("", { SVC__cluster__runner__host: "10.0.0.7" })), [
            `${problem.replace("0.0.0.0", "10.0.0.7")} (set by SVC__cluster__runner__host)`
          ])
          for (const host of ["127.0.0.1", "127.0.0.2", "localhost", "::1"]) {
            const loopback = yield* load("", { SVC__cluster__runner__host: host })
            assert.isTrue(Exit.isSuccess(loopback), `${host} is loopback`)
          }
          assert.deepStrictEqual(problemsOf(yield* load("cluster: { tls: { ca: ca.pem, cert: runner.pem } }")), [
            "cluster.tls.key: Missing key"
          ])
        })
      )
  )

  it.effect(
    "cluster settings resolve with their defaults; a wildcard advertised host and a short lock expiry are refused",
    () =>
      withDir((dir) =>
        Effect.gen(function* () {
          const defaults = yield* loadConfig({ cwd: dir, env: {} })
          assert.deepStrictEqual(defaults.cluster, {
            runner: { host: "127.0.0.1", port: 34431, advertisedHost: "127.0.0.1" },
            tls: undefined,
            shardsPerGroup: 300,
            shardLockRefreshIntervalMs: 2000,
            shardLockExpirationMs: 10_000,
            refreshAssignmentsIntervalMs: 1000,
            runnerHealthCheckIntervalMs: 5000,
            entityMessagePollIntervalMs: 1000,
            entityMaxIdleTimeMs: 60_000
          })
          const custom = yield* loadConfig({
            cwd: dir,
            env: {
              SVC__cluster__runner__host: "0.0.0.0",
              SVC__cluster__runner__advertised_host: "10.0.0.7",
              SVC__cluster__runner__port: "34500",
              SVC__cluster__shards_per_group: "64"
            }
          })
          assert.deepStrictEqual(custom.cluster.runner, { host: "0.0.0.0", port: 34500, advertisedHost: "10.0.0.7" })
          assert.strictEqual(custom.cluster.shardsPerGroup, 64)
          const refused = (env: Record<string, string>) =>
            Effect.map(Effect.exit(loadConfig({ cwd: dir, env })), problemsOf)
          assert.deepStrictEqual(yield* refused({ SVC__cluster__runner__host: "0.0.0.0" }), [
            "cluster.runner.advertised_host: 0.0.0.0 cannot be dialled; set the address other processes reach this worker at"
          ])
          assert.deepStrictEqual(
            yield* refused({
              SVC__cluster__shard_lock_refresh_interval: "5s",
              SVC__cluster__shard_lock_expiration: "10s"
            }),
            [
              "cluster.shard_lock_expiration: must be at least 3 times cluster.shard_lock_refresh_interval (set by SVC__cluster__shard_lock_expiration)"
            ]
          )
        })
      )
  )

  it.effect("environment overrides win over the file and are typed as YAML scalars", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const file = yield* write(dir, "custom.yaml", "api: { port: 9000 }\n")
        const config = yield* loadConfig({
          configPath: file,
          cwd: dir,
          env: { SVC__api__port: "9100", SVC__appMetrics__requestEvents__fullRequestRecording: "always" }
        })
        assert.strictEqual(config.listeners.api.port, 9100)
        assert.strictEqual(config.appMetrics.fullRequestRecording, "always")
      })
    )
  )

  it.effect("bad files are rejected with the key and the problem, never the value", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["api: { port: 'eighty' }", "api.port: expected an integer between 0 and 65535, got a string"],
          ["api: { port: 70000 }", "api.port"],
          ["databse: { provider: pglite }", "databse: Unexpected key; did you mean `database`?"],
          ["api: { prot: 9000 }", "api.prot: Unexpected key; did you mean `port`?"],
          ["log: { level: loud }", 'log.level: expected one of "trace", "debug", "info", "warn", "error"'],
          ["telemetry: { enabled: 1 }", "telemetry.enabled: expected true or false, got an integer"],
          ["cluster: { zzz: 1 }", "cluster.zzz: Unexpected key; known keys here: runner, tls,"],
          ["database: { provider: mysql }", "database.provider"],
          ["database: { provider: postgres }", "database: provider postgres needs"],
          ["system_auth: { actors: [{ external_id: x }] }", "system_auth.actors[0].permissions: Missing key"],
          [
            "system_auth: { jwt_signing_key: { public_key: { path: a }, private_key: { path: b } } }",
            "system_auth.jwt_signing_key: set exactly one"
          ],
          ["appMetrics: { resourceSnapshotInterval: soon }", "appMetrics.resourceSnapshotInterval"],
          ["appMetrics: { requestEvents: { retention: 30m } }", "appMetrics.requestEvents.retention: must be at least"],
          ["appMetrics: { resourceSnapshots: { retention: forever } }", "appMetrics.resourceSnapshots.retention"],
          ["telemetry: { sampling: { ratio: 2 } }", "telemetry.sampling.ratio"],
          ["counter_store: { provider: redis }", "counter_store.url: required"],
          [
            "database: { provider: postgres, url: 'postgres://u:hunter2@h/db', max_connections: -1 }",
            "database.max_connections"
          ],
          ["api: [1, 2", "YAML syntax error"],
          [
            "database: { provider: postgres, addresses: ['a:5432', 'b:5432'], database: svc }",
            "database.addresses: exactly one host:port"
          ],
          [
            "system_auth: { actors: [{ external_id: x, namespace: Root.Bad, permissions: [] }] }",
            "system_auth.actors[0].namespace"
          ],
          [
            "system_auth: { actors: [{ external_id: x, permissions: [{ namespace: 'root.*', resources: ['*'], verbs: ['*'] }] }] }",
            "system_auth.actors[0].permissions[0].namespace"
          ],
          ["- just\n- a list", "(root): expected a mapping"]
        ]
        for (const [text, expected] of cases) {
          const file = yield* write(dir, "bad.yaml", text)
          const exit = yield* Effect.exit(loadConfig({ configPath: file, cwd: dir, env: {} }))
          const problems = problemsOf(exit)
          assert.isTrue(
            problems.some((p) => p.startsWith(expected)),
            `${text} → ${JSON.stringify(problems)} should mention ${expected}`
          )
          assert.isFalse(problems.join(" ").includes("hunter2"), "a configured secret leaked into the message")
        }
      })
    )
  )

  it.effect("a problem in a key an environment override set names the variable", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const file = yield* write(dir, "svc.yaml", "api: { port: 9000 }\n")
        const problems = (env: Record<string, string>) =>
          Effect.map(Effect.exit(loadConfig({ configPath: file, cwd: dir, env })), problemsOf)
        assert.deepStrictEqual(yield* problems({ SVC__api__port: "eighty" }), [
          "api.port: expected an integer between 0 and 65535, got a string (set by SVC__api__port)"
        ])
        assert.deepStrictEqual(yield* problems({ SVC__API__port: "9100" }), [
          "API: Unexpected key; did you mean `api`? (set by SVC__API__port)"
        ])
        // a rule checked after decoding (resolve) names the variable too; the file's key names none
        assert.deepStrictEqual(yield* problems({ SVC__probes__poll_interval: "1ms", SVC__public__base_url: "x" }), [
          "probes.poll_interval: must be at least 50ms (set by SVC__probes__poll_interval)",
          "public.base_url: must be an absolute URL (set by SVC__public__base_url)"
        ])
        yield* write(dir, "svc.yaml", "api: { port: eighty }\n")
        assert.deepStrictEqual(yield* problems({ SVC__admin_api__port: "9101" }), [
          "api.port: expected an integer between 0 and 65535, got a string"
        ])
      })
    )
  )

  it.effect("a missing explicit file is an error", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(loadConfig({ configPath: "nope.yaml", cwd: dir, env: {} }))
        assert.deepStrictEqual(problemsOf(exit), ["file not found"])
      })
    )
  )
})
