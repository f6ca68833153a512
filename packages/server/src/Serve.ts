/**
 * `svc serve` and `svc migrate`: composes the feature layers — stores, authentication, resource
 * and connection services, request events, the proxy data plane, the worker and the selected
 * HTTP servers — into one layer graph (ARCHITECTURE "Processes").
 */
import { Context, Effect, Layer } from "effect"
import type { ServiceId } from "@svc/domain/Auth"
import * as path from "node:path"
import * as Auth from "./auth/Auth.ts"
import { readFile } from "./config/Files.ts"
import type { ResolvedConfig } from "./config/SvcConfig.ts"
import { SvcConfig } from "./config/SvcConfig.ts"
import * as ConnectionServices from "./connections/ConnectionServices.ts"
import { ensureDevSigningKey, ensureSelfSignedCertificate } from "./crypto/EmbeddedSecrets.ts"
import { Encryption } from "./crypto/Encryption.ts"
import * as Events from "./events/Events.ts"
import * as MetricsListener from "./http/MetricsListener.ts"
import * as Servers from "./http/Servers.ts"
import * as ProxyPlane from "./proxy/Proxy.ts"
import * as RateLimiting from "./ratelimit/RateLimiting.ts"
import { ActorDirectory } from "./resources/ActorDirectory.ts"
import * as Stores from "./stores/Stores.ts"
import * as TelemetryLayer from "./telemetry/TelemetryLayer.ts"
import { LogService } from "./telemetry/Logging.ts"
import { printBanner, writeAdminToken } from "./StartupBanner.ts"
import { warnPoolerWithoutDirectUrl } from "./Migrate.ts"
import * as Membership from "./worker/Membership.ts"
import * as Worker from "./worker/Worker.ts"

/** The ports the started services listen on (after `port: 0`, the ones the system gave), and `/metrics`'s. */
export class Served extends Context.Service<
  Served,
  { readonly ports: ReadonlyMap<ServiceId, number>; readonly metricsPort: number | undefined }
>()("svc/server/Served") {}

/**
 * Runs the selected services until interrupted (SIGINT/SIGTERM), then shuts down gracefully; every
 * JSON log record of the process names them (`service`).
 */
export const serve = (
  config: ResolvedConfig,
  services: ReadonlyArray<ServiceId>,
  options: { readonly migrate: boolean }
) =>
  Effect.gen(function* () {
    const { ports, metricsPort } = yield* Served
    const signingKey = config.auth.signingKey
    const tokenFile =
      "generated" in signingKey ? yield* writeAdminToken(config, signingKey.generated.privateKeyPath) : undefined
    yield* printBanner(config, services, tokenFile, ports, metricsPort)
    return yield* Effect.never
  }).pipe(Effect.provide(layer(config, services, options)))

/**
 * The selected services of one process, started: the whole composition of `svc serve` (stores,
 * authentication, resource and connection services, request events, the proxy data plane, the
 * worker, the HTTP servers), built in the layer's scope and shut down gracefully when it closes.
 * `@svc/testing` starts an in-process svc with it.
 */
export const layer = (
  config: ResolvedConfig,
  services: ReadonlyArray<ServiceId>,
  options: { readonly migrate: boolean }
) =>
  Layer.effect(
    Served,
    startServices(config, services, options).pipe(Effect.provideService(LogService, services.join(",")))
  )

// Untraced: the layers are built here, and a span of this call would be the parent of every span
// the built services start (their captured context), instead of the request's.
const startServices = Effect.fnUntraced(function* (
  config: ResolvedConfig,
  services: ReadonlyArray<ServiceId>,
  options: { readonly migrate: boolean }
) {
  yield* warnPoolerWithoutDirectUrl(config)
  const signingKey = config.auth.signingKey
  if ("generated" in signingKey && (yield* ensureDevSigningKey(signingKey.generated))) {
    yield* Effect.logWarning(
      `generated a development JWT signing key in ${path.dirname(signingKey.generated.privateKeyPath)}`
    )
  }
  if (services.includes("admin-api") && config.adminTls.selfSigned) {
    if (yield* ensureSelfSignedCertificate(config.adminTls)) {
      yield* Effect.logInfo(`generated a self-signed development certificate at ${config.adminTls.certPath}`)
    }
  }
  const verificationKey = yield* Auth.readVerificationKey(signingKey)
  const adminTls = services.includes("admin-api")
    ? {
        cert: yield* readFile("admin-api TLS certificate", config.adminTls.certPath),
        key: yield* readFile("admin-api TLS key", config.adminTls.keyPath)
      }
    : undefined
  // One instance of each shared service (and its cache) for the handlers and the worker: the
  // directory (the authenticator reads it, actor writes invalidate it), encryption (key writes
  // invalidate its cache) and rate limiting (rule writes reload its cache).
  const shared = Layer.mergeAll(
    ActorDirectory.layerNoDeps,
    Encryption.layerNoDeps(config.encryption.rootKey),
    RateLimiting.layerNoDeps
  )
  const handlerServices = ProxyPlane.layerNoDeps.pipe(
    Layer.provideMerge(ConnectionServices.layerNoDeps),
    Layer.provideMerge(Events.layerNoDeps(config)),
    Layer.provideMerge(shared)
  )
  const boundPorts = new Map<ServiceId, number>()
  let metricsPort: number | undefined
  const drain = Servers.makeDrain(config.http.drainTimeoutMs, config.http.shutdownDelayMs)
  const app = Layer.mergeAll(
    Servers.layer(config, services, adminTls).pipe(
      Layer.provide(Layer.succeed(Servers.BoundPorts, boundPorts)),
      Layer.provide(Layer.succeed(Servers.ServerDrain, drain)),
      Layer.provide(Auth.layerNoDeps(verificationKey)),
      Layer.provide(handlerServices)
    ),
    // `/metrics` on its own listener (never a service's port), one per process and its one store.
    MetricsListener.layer(config, (port) => {
      metricsPort = port
    }).pipe(Layer.provide(Layer.succeed(Servers.ServerDrain, drain))),
    services.includes("worker") ? Worker.layerNoDeps(config).pipe(Layer.provide(handlerServices)) : Layer.empty
  ).pipe(
    Layer.provide(Membership.layer(config, services)),
    Layer.provide(Stores.layer(config, { applyMigrations: options.migrate || config.database.provider === "pglite" })),
    Layer.provide(Layer.succeed(SvcConfig, config)),
    // Outermost: the tracer, metrics and log export (spec 8.3) reach every layer and request.
    Layer.provide(TelemetryLayer.layer(config, services))
  )
  yield* Layer.build(app)
  // Added after the layers, so it runs first on SIGTERM/SIGINT: the servers drain while every
  // service they use is still up; request events are flushed when the layers close after it.
  yield* Effect.addFinalizer(() => drain.drain)
  return Served.of({ ports: boundPorts, metricsPort })
})
