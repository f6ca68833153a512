/**
 * The resolved configuration the process runs with: the file (or the embedded default) with
 * environment overrides applied, validated, and every default filled in.
 */
import { Context, type Redacted } from "effect"
import type { ServiceId } from "@svc/domain/Auth"
import type { ConfigFile, ConfiguredActor } from "./ConfigSchema.ts"
import type { ResolvedTelemetry } from "./TelemetryConfig.ts"

/** TLS to PostgreSQL: `url` follows the URL's `sslmode`; `verified` requires TLS, checked against `caPath` or Node's CA store. */
export type ResolvedDatabaseTls =
  | { readonly mode: "url" }
  | {
      readonly mode: "verified"
      readonly caPath?: string | undefined
      readonly certPath?: string | undefined
      readonly keyPath?: string | undefined
    }

export type ResolvedDatabase =
  | { readonly provider: "pglite"; readonly path: string }
  | {
      readonly provider: "postgres"
      readonly url: string
      /** The session connection (migrations, shard locks) that bypasses a pooler; `url` when not configured. */
      readonly directUrl: string | undefined
      readonly maxConnections: number
      readonly ssl: ResolvedDatabaseTls
      /** Named prepared statements on `url` (off behind a transaction-mode pooler). */
      readonly preparedStatements: boolean
    }

export interface Listener {
  readonly host: string
  readonly port: number
}

export type SigningKey =
  | { readonly algorithm: "RS256"; readonly publicKeyPath: string }
  | { readonly algorithm: "HS256"; readonly secretPath: string }
  /** The embedded default: an RS256 key pair generated once and kept in the data directory. */
  | {
      readonly algorithm: "RS256"
      readonly generated: { readonly privateKeyPath: string; readonly publicKeyPath: string }
    }

/** Where the encryption root key (base64 of 32 bytes) comes from; `generated` is the embedded default's file. */
export type RootKeySource =
  | { readonly source: "file"; readonly path: string }
  | { readonly source: "env"; readonly name: string }
  | { readonly source: "value"; readonly value: Redacted.Redacted<string> }
  | { readonly source: "generated"; readonly path: string }

/** Where an OAuth2 client secret comes from (read when used, never logged). */
export type ClientSecretSource =
  | { readonly source: "file"; readonly path: string }
  | { readonly source: "env"; readonly name: string }
  | { readonly source: "value"; readonly value: Redacted.Redacted<string> }

/** Cluster membership settings; the shard count and timings must agree across processes. */
export interface ResolvedCluster {
  /** Where a worker's runner socket binds, and the host other processes dial. */
  readonly runner: { readonly host: string; readonly port: number; readonly advertisedHost: string }
  /** Mutual TLS on the runner transport: absolute PEM paths (`cluster.tls`); plain TCP when absent. */
  readonly tls: { readonly caPath: string; readonly certPath: string; readonly keyPath: string } | undefined
  readonly shardsPerGroup: number
  readonly shardLockRefreshIntervalMs: number
  readonly shardLockExpirationMs: number
  readonly refreshAssignmentsIntervalMs: number
  readonly runnerHealthCheckIntervalMs: number
  readonly entityMessagePollIntervalMs: number
  readonly entityMaxIdleTimeMs: number
}

export interface ResolvedConfig {
  /** The file the configuration came from, or `embedded default`. */
  readonly source: string
  readonly dataDir: string
  /** `access`: one access-log line per HTTP request (`log.access`, off by default). */
  readonly log: {
    readonly level: "trace" | "debug" | "info" | "warn" | "error"
    readonly format: "text" | "json"
    readonly access: boolean
  }
  readonly listeners: { readonly [K in ServiceId]: Listener }
  /** TLS for admin-api: configured files, or a self-signed development certificate in the data dir. */
  readonly adminTls: { readonly certPath: string; readonly keyPath: string; readonly selfSigned: boolean }
  /**
   * `drainTimeoutMs`: on SIGTERM/SIGINT, how long in-flight requests may take to finish before
   * their connections are closed (the process exits within it plus `shutdownGraceMs`).
   * `shutdownDelayMs`: on SIGTERM/SIGINT, how long `/readyz` answers 503 while the listeners
   * still serve, before the drain starts (a load balancer stops sending first).
   */
  readonly http: {
    readonly maxBodyBytes: number
    readonly drainTimeoutMs: number
    readonly shutdownDelayMs: number
    /** Tests only: every answer carries `X-Svc-Door: warm|cold`, the door that took the request (docs/proxy.md). */
    readonly doorHeader: boolean
  }
  readonly database: ResolvedDatabase
  /** The app-metrics database; `main` shares the main database (spec 8.2 allows it). */
  readonly appMetricsDatabase: ResolvedDatabase | "main"
  readonly counterStore: ResolvedCounterStore
  readonly auth: { readonly signingKey: SigningKey; readonly actors: ReadonlyArray<ConfiguredActor> }
  readonly appMetrics: {
    readonly resourceSnapshotInterval: string
    readonly fullRequestRecording: "never" | "always"
    /** How long request events and their recordings are kept (`appMetrics.requestEvents.retention`). */
    readonly requestEventsRetentionMs: number
    /** How long resource snapshots are kept (`appMetrics.resourceSnapshots.retention`). */
    readonly resourceSnapshotsRetentionMs: number
    readonly blobStorage: NonNullable<NonNullable<ConfigFile["appMetrics"]>["blobStorage"]>
  }
  /** Carry-forward (spec 2.4): how often the consistency checker runs and the outbox is polled. */
  readonly labels: { readonly consistencyCheckIntervalMs: number; readonly propagationPollIntervalMs: number }
  /** Envelope encryption (SECURITY.md "Encryption at rest"): the root key and the re-encryption outbox poll. */
  readonly encryption: { readonly rootKey: RootKeySource; readonly reencryptPollIntervalMs: number }
  /** Outbound connections of connectors: loopback and private addresses only when allowed. */
  readonly outbound: {
    readonly allowPrivateNetworks: boolean
    /** The largest head (status line and headers) an upstream answer may have; 16 KiB by default. */
    readonly maxResponseHeaderBytes: number
  }
  /** Rate-limit rules (spec 4.6 rule 6): how often each process reloads its rule cache. */
  readonly rateLimits: { readonly refreshIntervalMs: number }
  /** Connections: how long a setup may stand still before it is removed as abandoned. */
  readonly connections: { readonly setupTtlMs: number }
  /** The api's MCP sessions (docs/agents.md): idle expiry and the most kept per process. */
  readonly mcp: { readonly idleTimeoutMs: number; readonly maxSessions: number }
  /** Webhooks to the host (docs/webhooks.md): retry waits, outbox poll, attempt timeout, per-endpoint bound, auto-disable, log retention. */
  readonly webhooks: {
    readonly retryScheduleMs: ReadonlyArray<number>
    readonly pollIntervalMs: number
    readonly timeoutMs: number
    readonly concurrencyPerEndpoint: number
    readonly disableAfterMs: number
    readonly logRetentionMs: number
  }
  /** Background connection probes: scheduler tick and parallelism. */
  readonly probes: { readonly pollIntervalMs: number; readonly maxConcurrency: number }
  /** Version migrations (spec 4.3): the longest one hook may run, whatever the migration's timeout. */
  readonly migrations: {
    readonly hookTimeoutMs: number
    /** A hook's QuickJS heap limit. */
    readonly hookMemoryBytes: number
    /** A hook's QuickJS stack limit. */
    readonly hookStackBytes: number
    /** Sandbox threads in the worker's pool. */
    readonly hookWorkers: number
  }
  readonly hostApplication: NonNullable<ConfigFile["host_application"]>
  /** The browser-facing service: its external base URL (no trailing slash) and session lifetime. */
  readonly publicService: { readonly baseUrl: string; readonly sessionTtlMs: number }
  /** OAuth2 connections: client secrets by client id, token lifetime default, sweep and authorization timing. */
  readonly oauth2: {
    readonly clients: ReadonlyMap<string, ClientSecretSource>
    readonly defaultTokenLifetimeMs: number
    readonly refreshSweepIntervalMs: number
    readonly authorizationTimeoutMs: number
  }
  /** OpenTelemetry (spec 8.3) with the `OTEL_*` environment applied; see `TelemetryConfig.ts`. */
  readonly telemetry: ResolvedTelemetry
  /** The cluster (ARCHITECTURE "Processes"): a worker's runner address, shard count and timings. */
  readonly cluster: ResolvedCluster
  /** The decoded file as written, for features that read their own block. */
  readonly file: ConfigFile
}

/** The configuration of the running process. */
/** `outbound.max_response_header_bytes` default: 16 KiB, Node's own limit for an HTTP head. */
export const defaultMaxResponseHeaderBytes = 16 * 1024

/** `mcp.session_idle_timeout` default: 30 minutes. */
export const defaultMcpSessionIdleTimeoutMs = 30 * 60 * 1000

/** `mcp.max_sessions` default, per api process. */
export const defaultMcpMaxSessions = 10_000

export class SvcConfig extends Context.Service<SvcConfig, ResolvedConfig>()("svc/server/SvcConfig") {}

/** TLS files of a `rediss://` counter store, absolute paths. */
export interface ResolvedRedisTls {
  readonly ca: string
  readonly cert?: string | undefined
  readonly key?: string | undefined
}

/** The counter store: in memory (embedded default), one Redis, or a Redis Cluster from its seed nodes. */
export type ResolvedCounterStore =
  | { readonly provider: "memory" }
  | {
      readonly provider: "redis"
      readonly url: string
      readonly keyPrefix: string
      readonly tls?: ResolvedRedisTls | undefined
    }
  | {
      readonly provider: "redis-cluster"
      /** Scheme, user and password for every node (`redis://` when not configured). */
      readonly url: string
      readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>
      readonly keyPrefix: string
      readonly tls?: ResolvedRedisTls | undefined
    }
