/**
 * An in-process svc for a host application's own tests (docs/testing.md): the api service on an
 * ephemeral port with the embedded worker, PGlite in a directory of its own under the cache (a
 * copy of a migrated template, its database opened ahead: `WarmDatabase.ts`), the in-memory
 * counter store, the process's signing key (`KitSecrets.ts`), resources seeded from a fixture object and a fake upstream that records what svc sent. It is the very
 * composition `svc serve` runs (`@svc/server/Serve`), configured through the real loader.
 *
 * `SvcTest.layer(options)` provides `SvcTest`, `SvcClient` (admin token) and `FakeUpstream`, for
 * `@effect/vitest`'s `it.layer`; `SvcTest.start(options)` is the same as a promise for plain
 * vitest or jest. With `adminApi: true` svc also serves its admin-api (TLS, the generated
 * development certificate) and `SvcTest.adminClient` provides `SvcAdminClient` trusting it.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { SvcAdminClient } from "@svc/client/SvcAdminClient"
import { SvcClient } from "@svc/client/SvcClient"
import { loadConfig } from "@svc/server/config/ConfigLoader"
import * as Serve from "@svc/server/Serve"
import { Clock, Console, Context, Effect, Layer, ManagedRuntime, References } from "effect"
import type { LogLevel } from "effect/LogLevel"
import { importPKCS8, SignJWT } from "jose"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { openAhead } from "@svc/sql/PgliteOpen"
import { prepareSpare, template } from "./DatabaseTemplate.ts"
import { type Fixture, type SeededResources, seed } from "./Fixture.ts"
import { FakeUpstream, type Upstream } from "./FakeUpstream.ts"
import { defaultCacheDir } from "./OpenOnImport.ts"
import { keepCertificate, writeCertificate, writeSigningKey } from "./KitSecrets.ts"
import { freshRunDir, prepareRunDir, removeRunDir, takeRunDir } from "./WarmDatabase.ts"

/** Options of `SvcTest.layer` / `SvcTest.start`; every one is optional. */
export interface SvcTestOptions {
  /** The resources to create, or a function of the fake upstream (for `proxy.allowed_hosts`). */
  readonly fixture?: Fixture | ((context: { readonly upstream: Upstream }) => Fixture)
  /**
   * Extra configuration, as a `svc.yaml` document (docs/configuration.md), over the test defaults
   * (`api.port: 0`, `worker.port: 0`, `outbound.allow_private_networks: true`); a top-level key
   * given here replaces the default's whole block.
   */
  readonly config?: Readonly<Record<string, unknown>>
  /** Where the migrated database template is kept between runs (default: `<os tmpdir>/svc-testing`). */
  readonly cacheDir?: string
  /** svc's own log records below this level are dropped (default `Error`: the embedded default's key-generation warnings are expected here). */
  readonly logLevel?: LogLevel
  /** Also serve the admin-api (TLS with svc's self-signed development certificate), for `SvcTest.adminClient`. */
  readonly adminApi?: boolean
}

/** What a test reads from its svc. */
export interface SvcTestInfo {
  /** The api service, `http://127.0.0.1:<port>`. */
  readonly baseUrl: string
  /** A token of the configured admin actor (`admin`, every permission under root). */
  readonly adminToken: string
  /** Signs a one-hour RS256 token for an actor (its `externalId`) with svc's generated key. */
  readonly token: (externalId: string, claims?: Readonly<Record<string, unknown>>) => Promise<string>
  /** The fixture's resources as svc created them. */
  readonly seeded: SeededResources
  /** The fake upstream (also provided as `FakeUpstream`). */
  readonly upstream: Upstream
  /** The svc data directory of this test (removed when the test's svc stops). */
  readonly dataDir: string
  /** With `adminApi: true`: the admin-api, `https://127.0.0.1:<port>`, and its certificate (PEM) to trust. */
  readonly admin: { readonly baseUrl: string; readonly certificate: string } | undefined
}

/** The promise API: `SvcTestInfo`, a way to run client effects, and `stop`. */
export interface SvcTestHandle extends SvcTestInfo {
  /** Runs an effect that uses `SvcClient`, `SvcTest` or `FakeUpstream`. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, SvcTest | SvcClient | FakeUpstream>) => Promise<A>
  /** Stops svc and the upstream and removes the data directory. */
  readonly stop: () => Promise<void>
}

const defaults = {
  api: { port: 0 },
  admin_api: { port: 0 },
  worker: { port: 0 },
  outbound: { allow_private_networks: true }
}

/**
 * This start's directory: the one prepared ahead (its database open or opening), else a fresh
 * copy of the template whose database starts opening now, while svc's other layers are made.
 * Removed when the test's svc stops.
 */
const runDir = (dbTemplate: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const prepared = await takeRunDir(dbTemplate)
      if (prepared !== undefined) return prepared
      const run = await freshRunDir(dbTemplate)
      openAhead({ dataDir: run.dataDir })
      return run
    }),
    (run) => Effect.promise(() => removeRunDir(run))
  )

/** Starts svc in a fresh directory; answers its info (the fixture seeded). */
const start = (options: SvcTestOptions) =>
  Effect.gen(function* () {
    const upstream = yield* FakeUpstream
    const dbTemplate = yield* template(options.cacheDir ?? defaultCacheDir)
    const { dir } = yield* runDir(dbTemplate)
    const configPath = path.join(dir, "svc.yaml")
    // JSON is YAML: the document goes through the same loader and schema as an operator's file.
    yield* Effect.promise(() => fs.writeFile(configPath, JSON.stringify({ ...defaults, ...options.config })))
    const config = yield* loadConfig({ configPath, cwd: dir, env: {} }).pipe(Effect.orDie)
    const signingKey = config.auth.signingKey
    if ("generated" in signingKey) yield* Effect.promise(() => writeSigningKey(signingKey.generated))
    const selfSigned = options.adminApi === true && config.adminTls.selfSigned
    if (selfSigned) yield* Effect.promise(() => writeCertificate(config.adminTls))
    const services =
      options.adminApi === true ? (["api", "worker", "admin-api"] as const) : (["api", "worker"] as const)
    const served = yield* Layer.build(Serve.layer(config, services, { migrate: true })).pipe(
      Effect.map((context) => Context.get(context, Serve.Served)),
      Effect.orDie
    )
    const port = served.ports.get("api")
    if (port === undefined) return yield* Effect.die(new Error("svc started without an api port"))
    const baseUrl = `http://127.0.0.1:${port}`
    if (selfSigned) yield* Effect.promise(() => keepCertificate(config.adminTls))
    if (!("generated" in signingKey)) {
      return yield* Effect.die(
        new Error("SvcTest signs tokens with svc's generated key: configure no auth.signing_key")
      )
    }
    const key = yield* Effect.promise(async () =>
      importPKCS8(await fs.readFile(signingKey.generated.privateKeyPath, "utf8"), "RS256")
    )
    const token = (externalId: string, claims: Readonly<Record<string, unknown>> = {}) =>
      new SignJWT({ ...claims })
        .setProtectedHeader({ alg: "RS256", typ: "JWT" })
        .setSubject(externalId)
        .setIssuedAt()
        .setExpirationTime("1h")
        .setJti(randomUUID())
        .sign(key)
    const adminToken = yield* Effect.promise(() => token(config.auth.actors[0]?.external_id ?? "admin"))
    const fixture = typeof options.fixture === "function" ? options.fixture({ upstream }) : (options.fixture ?? {})
    const seeded = yield* Effect.promise(() => seed(baseUrl, adminToken, fixture))
    // In the background, while the tests run: the next start of this process takes a database
    // already open, the next run's start renames a ready copy instead of copying. A copy cut short
    // by the process exiting is removed later.
    yield* Effect.sync(() => void prepareRunDir(dbTemplate).then(() => prepareSpare(dbTemplate)))
    const adminPort = served.ports.get("admin-api")
    const admin =
      adminPort === undefined
        ? undefined
        : {
            baseUrl: `https://127.0.0.1:${adminPort}`,
            certificate: yield* Effect.promise(() => fs.readFile(config.adminTls.certPath, "utf8"))
          }
    return SvcTest.of({ baseUrl, adminToken, token, seeded, upstream, dataDir: path.join(dir, ".svc"), admin })
  })

/** The in-process svc of a test. */
export class SvcTest extends Context.Service<SvcTest, SvcTestInfo>()("@svc/testing/SvcTest") {
  /** svc started for the layer's lifetime, with `SvcClient` (admin token) and `FakeUpstream`. */
  static readonly layer = (options: SvcTestOptions = {}): Layer.Layer<SvcTest | SvcClient | FakeUpstream> => {
    // svc runs on the live clock and console even where a test provides TestClock/TestConsole
    // (`it.layer` does unless `excludeTestServices`): its timers, windows and expiries are real.
    const svc = Layer.effect(
      SvcTest,
      start(options).pipe(
        Effect.provideService(Clock.Clock, Clock.Clock.defaultValue()),
        Effect.provideService(Console.Console, Console.Console.defaultValue()),
        Effect.provideService(References.MinimumLogLevel, options.logLevel ?? "Error")
      )
    )
    const client = Layer.unwrap(
      Effect.map(SvcTest, (info) => SvcClient.layer({ baseUrl: info.baseUrl, token: info.adminToken }))
    )
    return Layer.provideMerge(client, svc).pipe(Layer.provideMerge(FakeUpstream.layer))
  }

  /**
   * `SvcAdminClient` on the admin-api of a `SvcTest` started with `adminApi: true` (admin token;
   * over node:https trusting svc's development certificate):
   * `it.layer(Layer.provideMerge(SvcTest.adminClient, SvcTest.layer({ adminApi: true })))`.
   */
  static readonly adminClient: Layer.Layer<SvcAdminClient, never, SvcTest> = Layer.unwrap(
    Effect.map(SvcTest, (info) => {
      if (info.admin === undefined) {
        return Layer.effect(
          SvcAdminClient,
          Effect.die(new Error("SvcTest.adminClient needs SvcTest.layer({ adminApi: true })"))
        )
      }
      return SvcAdminClient.layerNoDeps({ baseUrl: info.admin.baseUrl, token: info.adminToken }).pipe(
        Layer.provide(NodeHttpClient.layerNodeHttpOptions({ ca: info.admin.certificate }))
      )
    })
  )

  /** The promise API: starts svc (with the fixture seeded) and answers a handle; `await handle.stop()` after the tests. */
  static readonly start = async (options: SvcTestOptions = {}): Promise<SvcTestHandle> => {
    const runtime = ManagedRuntime.make(SvcTest.layer(options))
    const context = await runtime.context()
    return {
      ...Context.get(context, SvcTest),
      run: (effect) => runtime.runPromise(effect),
      stop: () => runtime.dispose()
    }
  }
}
