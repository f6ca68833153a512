/**
 * `telemetry.prometheus` resolution (SECURITY.md "Observability endpoints are not public"): the
 * scrape listener is loopback on 9464 unless configured, takes the environment overrides like
 * every key, and never shares a service's port.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "./ConfigLoader.ts"

const inDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-prometheus-config-"))),
    f,
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

describe("telemetry.prometheus", () => {
  it.effect("defaults to off, loopback and 9464; enabling it keeps the loopback host", () =>
    inDir((dir) =>
      Effect.gen(function* () {
        const off = yield* loadConfig({ cwd: dir, env: {} })
        assert.deepStrictEqual(off.telemetry.prometheus, { enabled: false, host: "127.0.0.1", port: 9464 })
        const on = yield* loadConfig({ cwd: dir, env: { SVC__telemetry__prometheus__enabled: "true" } })
        assert.deepStrictEqual(on.telemetry.prometheus, { enabled: true, host: "127.0.0.1", port: 9464 })
        // Neither the services' hosts nor OTLP settings move the scrape off loopback.
        const elsewhere = yield* loadConfig({
          cwd: dir,
          env: {
            SVC__telemetry__prometheus__enabled: "true",
            SVC__api__host: "0.0.0.0",
            SVC__public__host: "0.0.0.0",
            SVC__telemetry__enabled: "true",
            OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318"
          }
        })
        assert.strictEqual(elsewhere.telemetry.prometheus.host, "127.0.0.1")
      })
    )
  )

  it.effect("host and port come from the file or the environment overrides; port 0 is allowed", () =>
    inDir((dir) =>
      Effect.gen(function* () {
        yield* Effect.promise(() =>
          fs.writeFile(
            path.join(dir, "svc.yaml"),
            "telemetry:\n  prometheus: { enabled: true, host: 10.0.0.5, port: 9100 }\n"
          )
        )
        const file = yield* loadConfig({ configPath: path.join(dir, "svc.yaml"), cwd: dir, env: {} })
        assert.deepStrictEqual(file.telemetry.prometheus, { enabled: true, host: "10.0.0.5", port: 9100 })
        const env = yield* loadConfig({
          configPath: path.join(dir, "svc.yaml"),
          cwd: dir,
          env: { SVC__telemetry__prometheus__port: "0", SVC__telemetry__prometheus__host: "::1" }
        })
        assert.deepStrictEqual(env.telemetry.prometheus, { enabled: true, host: "::1", port: 0 })
      })
    )
  )

  it.effect("a service's port is rejected, and so is a port out of range", () =>
    inDir((dir) =>
      Effect.gen(function* () {
        const clash = yield* Effect.exit(
          loadConfig({
            cwd: dir,
            env: { SVC__telemetry__prometheus__enabled: "true", SVC__telemetry__prometheus__port: "8080" }
          })
        )
        assert.isTrue(Exit.isFailure(clash))
        if (Exit.isFailure(clash)) {
          const reason = clash.cause.reasons.find((r) => r._tag === "Fail")
          assert.deepStrictEqual(reason?._tag === "Fail" ? reason.error.problems : [], [
            "telemetry.prometheus.port: 8080 is also the port of public; /metrics gets a port of its own, never a service's (set by SVC__telemetry__prometheus__port)"
          ])
        }
        // Off, the port is not checked (nothing listens on it).
        const off = yield* loadConfig({ cwd: dir, env: { SVC__telemetry__prometheus__port: "8080" } })
        assert.isFalse(off.telemetry.prometheus.enabled)
        const range = yield* Effect.exit(loadConfig({ cwd: dir, env: { SVC__telemetry__prometheus__port: "70000" } }))
        assert.isTrue(Exit.isFailure(range))
      })
    )
  )
})
