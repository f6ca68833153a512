/**
 * Loads the configuration: `--config <path>`, else `$SVC_CONFIG`, else `./svc.yaml` when present, else the embedded
 * default; then `SVC__<key>__<key>=value` environment overrides; then Schema decoding with errors
 * that name the key. Never echoes configured values (they may be secrets).
 */
import { Effect, Predicate, Schema } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { parse as parseYaml, YAMLParseError } from "yaml"
import { allServiceIds, type ServiceId } from "@svc/domain/Auth"
import { defaultRetrySchedule } from "@svc/domain/Webhook"
import { ConfigFile, type ConfiguredActor } from "./ConfigSchema.ts"
import { resolveCluster } from "./ClusterConfig.ts"
import { decodeProblems, type EnvSources, withEnvSource } from "./ConfigMessages.ts"
import { resolveCounterStore } from "./CounterStoreConfig.ts"
import { resolveDatabase } from "./DatabaseConfig.ts"
import {
  defaultDrainTimeoutMs,
  defaultRetentionMs,
  durationMs,
  hookTimeoutMs,
  intervalMs,
  minimumRetentionMs
} from "./Durations.ts"
import { resolveClientSecrets, resolveRootKey, resolveSigningKey } from "./SecretSources.ts"
import {
  defaultMaxResponseHeaderBytes,
  defaultMcpMaxSessions,
  defaultMcpSessionIdleTimeoutMs,
  type Listener,
  type ResolvedConfig
} from "./SvcConfig.ts"
import { resolveTelemetry } from "./TelemetryConfig.ts"

/** The configuration could not be read or is invalid; `problems` name each bad key. */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  source: Schema.String,
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `invalid configuration (${this.source}):\n${this.problems.map((p) => `  - ${p}`).join("\n")}`
  }
}

export interface LoadOptions {
  /** Explicit `--config` path. */
  readonly configPath?: string | undefined
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
}

const ENV_PREFIX = "SVC__"

/** `migrations.hook_memory_bytes` default: a hook's QuickJS heap, 32 MiB. */
const defaultHookMemoryBytes = 32 * 1024 * 1024
/** `migrations.hook_stack_bytes` default: a hook's QuickJS stack, 1 MiB (about 5,000 nested calls). */
const defaultHookStackBytes = 1024 * 1024
/** `migrations.hook_workers` default: one sandbox thread per core, at most 4. */
const defaultHookWorkers = (): number => Math.min(4, Math.max(1, os.availableParallelism()))

const defaultPorts: Record<ServiceId, number> = { api: 8081, "admin-api": 8082, public: 8080, worker: 8083 }

/** The default admin actor of the embedded default: every verb on every resource under root. */
export const defaultAdminActor: ConfiguredActor = {
  external_id: "admin",
  namespace: "root",
  name: "admin",
  permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }]
}

const exists = (file: string) =>
  Effect.promise(() =>
    fs.stat(file).then(
      (s) => s.isFile(),
      () => false
    )
  )

const readSource = Effect.fnUntraced(function* (options: LoadOptions) {
  const explicit = options.configPath ?? options.env.SVC_CONFIG
  if (explicit !== undefined) {
    const file = path.resolve(options.cwd, explicit)
    if (!(yield* exists(file))) {
      return yield* new ConfigError({ source: file, problems: ["file not found"] })
    }
    return { source: file, text: yield* Effect.promise(() => fs.readFile(file, "utf8")) }
  }
  const local = path.resolve(options.cwd, "svc.yaml")
  if (yield* exists(local)) return { source: local, text: yield* Effect.promise(() => fs.readFile(local, "utf8")) }
  return { source: "embedded default", text: "" }
})

const parseDocument = (source: string, text: string) =>
  Effect.try({
    try: () => (parseYaml(text) as unknown) ?? {},
    catch: (e) =>
      new ConfigError({
        source,
        problems: [
          e instanceof YAMLParseError
            ? `YAML syntax error at line ${e.linePos?.[0]?.line ?? "?"}: ${e.code}`
            : "the file is not valid YAML"
        ]
      })
  })

/**
 * Applies `SVC__a__b=value` overrides; values are read as YAML scalars (`8081`, `true`, `[a, b]`).
 * `sources` maps each overridden key (`a.b`) to its variable, for error messages.
 */
export const applyEnvOverrides = (
  doc: unknown,
  env: Readonly<Record<string, string | undefined>>
): { readonly doc: unknown; readonly problems: ReadonlyArray<string>; readonly sources: EnvSources } => {
  const root: Record<string, unknown> = Predicate.isObject(doc) ? structuredClone(doc) : {}
  const problems: Array<string> = []
  const sources = new Map<string, string>()
  for (const [name, raw] of Object.entries(env).sort(([a], [b]) => a.localeCompare(b))) {
    if (!name.startsWith(ENV_PREFIX) || raw === undefined) continue
    const keys = name.slice(ENV_PREFIX.length).split("__")
    if (keys.some((k) => k === "")) {
      problems.push(`${name}: empty key segment`)
      continue
    }
    let value: unknown
    try {
      value = parseYaml(raw) as unknown
    } catch {
      value = raw
    }
    let node = root
    for (const key of keys.slice(0, -1)) {
      const next = node[key]
      if (!Predicate.isObject(next)) node[key] = {}
      node = node[key] as Record<string, unknown>
    }
    node[keys[keys.length - 1] as string] = value
    sources.set(keys.join("."), name)
  }
  return { doc: root, problems, sources }
}

const publicBaseUrl = (file: ConfigFile, listener: Listener, problems: Array<string>): string => {
  const configured = file.public?.base_url
  if (configured === undefined) {
    const host = listener.host === "0.0.0.0" || listener.host === "::" ? "127.0.0.1" : listener.host
    return `http://${host.includes(":") ? `[${host}]` : host}:${listener.port}`
  }
  try {
    const url = new URL(configured)
    if (url.protocol !== "http:" && url.protocol !== "https:") problems.push("public.base_url: must be http or https")
    return configured.replace(/\/+$/, "")
  } catch {
    problems.push("public.base_url: must be an absolute URL")
    return configured
  }
}

/** Fills every default and checks the rules that span several keys. */
export const resolve = (
  file: ConfigFile,
  source: string,
  cwd: string,
  env: Readonly<Record<string, string | undefined>> = {}
): Effect.Effect<ResolvedConfig, ConfigError> => {
  const problems: Array<string> = []
  const base = source === "embedded default" ? cwd : path.dirname(source)
  const dataDir = path.resolve(base, file.data_dir ?? ".svc")
  const listener = (id: ServiceId, l: { readonly host?: string; readonly port?: number } | undefined): Listener => ({
    host: l?.host ?? "127.0.0.1",
    port: l?.port ?? defaultPorts[id]
  })
  const blocks = { api: file.api, "admin-api": file.admin_api, public: file.public, worker: file.worker }
  const listeners = Object.fromEntries(allServiceIds.map((id) => [id, listener(id, blocks[id])])) as Record<
    ServiceId,
    Listener
  >
  const database = resolveDatabase(file.database ?? { provider: "pglite" }, "database", { base, dataDir }, problems)
  const metricsDb = file.appMetrics?.database
  const appMetricsDatabase =
    metricsDb === undefined ? "main" : resolveDatabase(metricsDb, "appMetrics.database", { base, dataDir }, problems)
  const blob = file.appMetrics?.blobStorage ?? { provider: "filesystem" as const }
  if (blob.provider === "s3" && blob.bucket === undefined) {
    problems.push("appMetrics.blobStorage.bucket: required for provider s3")
  }
  const tls = file.admin_api?.tls
  const resolved: ResolvedConfig = {
    source,
    dataDir,
    log: { level: file.log?.level ?? "info", format: file.log?.format ?? "text", access: file.log?.access ?? false },
    listeners,
    adminTls:
      tls === undefined
        ? {
            certPath: path.join(dataDir, "tls", "admin-api.crt"),
            keyPath: path.join(dataDir, "tls", "admin-api.key"),
            selfSigned: true
          }
        : { certPath: path.resolve(base, tls.cert_path), keyPath: path.resolve(base, tls.key_path), selfSigned: false },
    http: {
      maxBodyBytes: file.http?.max_body_bytes ?? 1024 * 1024,
      drainTimeoutMs: durationMs(file.http?.drain_timeout, defaultDrainTimeoutMs),
      shutdownDelayMs: durationMs(file.http?.shutdown_delay, 0),
      doorHeader: file.http?.door_header ?? false
    },
    database,
    appMetricsDatabase,
    counterStore: resolveCounterStore(file.counter_store, base, problems),
    auth: {
      signingKey: resolveSigningKey(file, base, dataDir, problems),
      actors: file.system_auth?.actors ?? [defaultAdminActor]
    },
    appMetrics: {
      resourceSnapshotInterval: file.appMetrics?.resourceSnapshotInterval ?? "15m",
      fullRequestRecording: file.appMetrics?.requestEvents?.fullRequestRecording ?? "never",
      requestEventsRetentionMs: intervalMs(
        file.appMetrics?.requestEvents?.retention,
        "appMetrics.requestEvents.retention",
        defaultRetentionMs,
        minimumRetentionMs,
        problems
      ),
      resourceSnapshotsRetentionMs: intervalMs(
        file.appMetrics?.resourceSnapshots?.retention,
        "appMetrics.resourceSnapshots.retention",
        defaultRetentionMs,
        minimumRetentionMs,
        problems
      ),
      blobStorage: { ...blob, path: path.resolve(dataDir, blob.path ?? "blobs") }
    },
    labels: {
      consistencyCheckIntervalMs: Math.max(
        1000,
        durationMs(file.labels?.consistency_check_interval, 24 * 60 * 60 * 1000)
      ),
      propagationPollIntervalMs: Math.max(50, durationMs(file.labels?.propagation_poll_interval, 1000))
    },
    encryption: {
      rootKey: resolveRootKey(file, base, dataDir, database, problems),
      reencryptPollIntervalMs: intervalMs(
        file.encryption?.reencrypt_poll_interval,
        "encryption.reencrypt_poll_interval",
        1000,
        50,
        problems
      )
    },
    outbound: {
      allowPrivateNetworks: file.outbound?.allow_private_networks ?? false,
      maxResponseHeaderBytes: file.outbound?.max_response_header_bytes ?? defaultMaxResponseHeaderBytes
    },
    rateLimits: {
      // spec 4.6 rule 6: reloaded every 5 minutes by default, at most every 5 seconds
      refreshIntervalMs: intervalMs(
        file.rate_limits?.refresh_interval,
        "rate_limits.refresh_interval",
        5 * 60 * 1000,
        5000,
        problems
      )
    },
    connections: {
      setupTtlMs: intervalMs(file.connections?.setup_ttl, "connections.setup_ttl", 24 * 60 * 60 * 1000, 1000, problems)
    },
    mcp: {
      idleTimeoutMs: intervalMs(
        file.mcp?.session_idle_timeout,
        "mcp.session_idle_timeout",
        defaultMcpSessionIdleTimeoutMs,
        1000,
        problems
      ),
      maxSessions: file.mcp?.max_sessions ?? defaultMcpMaxSessions
    },
    webhooks: {
      retryScheduleMs: (file.webhooks?.retry_schedule ?? defaultRetrySchedule).map((text, i) =>
        intervalMs(text, `webhooks.retry_schedule[${i}]`, 5000, 10, problems)
      ),
      pollIntervalMs: intervalMs(file.webhooks?.poll_interval, "webhooks.poll_interval", 1000, 10, problems),
      timeoutMs: intervalMs(file.webhooks?.timeout, "webhooks.timeout", 10_000, 100, problems),
      concurrencyPerEndpoint: file.webhooks?.concurrency_per_endpoint ?? 4,
      disableAfterMs: intervalMs(
        file.webhooks?.disable_after,
        "webhooks.disable_after",
        5 * 24 * 60 * 60 * 1000,
        1000,
        problems
      ),
      logRetentionMs: intervalMs(
        file.webhooks?.log_retention,
        "webhooks.log_retention",
        30 * 24 * 60 * 60 * 1000,
        60_000,
        problems
      )
    },
    probes: {
      pollIntervalMs: intervalMs(file.probes?.poll_interval, "probes.poll_interval", 1000, 50, problems),
      maxConcurrency: file.probes?.max_concurrency ?? 8
    },
    migrations: {
      hookTimeoutMs: hookTimeoutMs(file.migrations?.hook_timeout, problems),
      hookMemoryBytes: file.migrations?.hook_memory_bytes ?? defaultHookMemoryBytes,
      hookStackBytes: file.migrations?.hook_stack_bytes ?? defaultHookStackBytes,
      hookWorkers: file.migrations?.hook_workers ?? defaultHookWorkers()
    },
    hostApplication: file.host_application ?? {},
    publicService: {
      baseUrl: publicBaseUrl(file, listeners.public, problems),
      sessionTtlMs: intervalMs(file.public?.session_ttl, "public.session_ttl", 8 * 60 * 60 * 1000, 60_000, problems)
    },
    oauth2: {
      clients: resolveClientSecrets(file, base, problems),
      defaultTokenLifetimeMs: intervalMs(
        file.oauth2?.default_token_lifetime,
        "oauth2.default_token_lifetime",
        60 * 60 * 1000,
        1000,
        problems
      ),
      refreshSweepIntervalMs: intervalMs(
        file.oauth2?.refresh_sweep_interval,
        "oauth2.refresh_sweep_interval",
        30_000,
        100,
        problems
      ),
      authorizationTimeoutMs: intervalMs(
        file.oauth2?.authorization_timeout,
        "oauth2.authorization_timeout",
        10 * 60 * 1000,
        1000,
        problems
      )
    },
    telemetry: resolveTelemetry(file.telemetry, env, problems),
    cluster: resolveCluster(file, base, problems),
    file
  }
  checkPrometheusPort(resolved, problems)
  return problems.length > 0 ? Effect.fail(new ConfigError({ source, problems })) : Effect.succeed(resolved)
}

/** `/metrics` has a listener of its own: never the port of a service (SECURITY.md). */
const checkPrometheusPort = (config: ResolvedConfig, problems: Array<string>) => {
  const { enabled, port } = config.telemetry.prometheus
  if (!enabled || port === 0) return
  const clash = allServiceIds.find((id) => config.listeners[id].port === port)
  if (clash !== undefined) {
    problems.push(
      `telemetry.prometheus.port: ${port} is also the port of ${clash}; /metrics gets a port of its own, never a service's`
    )
  }
}

/** Reads, overrides, decodes and resolves the configuration. */
export const loadConfig = Effect.fn("ConfigLoader.loadConfig")(function* (options: LoadOptions) {
  const { source, text } = yield* readSource(options)
  const parsed = yield* parseDocument(source, text)
  if (!Predicate.isObject(parsed)) {
    return yield* new ConfigError({ source, problems: ["(root): expected a mapping of keys to values"] })
  }
  const { doc, problems, sources } = applyEnvOverrides(parsed, options.env)
  if (problems.length > 0) return yield* new ConfigError({ source, problems })
  // `reportInput` lets a message say what kind of value was found; the value itself is never printed.
  const file = yield* Schema.decodeUnknownEffect(ConfigFile)(doc, {
    onExcessProperty: "error",
    errors: "all",
    reportInput: true
  }).pipe(Effect.mapError((e) => new ConfigError({ source, problems: decodeProblems(e.issue, sources) })))
  return yield* resolve(file, source, options.cwd, options.env).pipe(
    Effect.mapError((e) =>
      sources.size === 0 ? e : new ConfigError({ source, problems: e.problems.map((p) => withEnvSource(p, sources)) })
    )
  )
})
