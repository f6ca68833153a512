/**
 * The configuration file schema (README "Configuration reference"). Keys are the spec's where it
 * names them (`system_auth…`, `appMetrics…`, `host_application…`, `telemetry…`); unknown keys are
 * rejected so a typo never silently falls back to a default.
 */
import { DurationString } from "@svc/domain/Duration"
import { Schema } from "effect"
import { Permission } from "@svc/domain/Auth"
import { NamespacePath, NamespacePattern } from "@svc/domain/PermissionMatcher"

const Port = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))
const NonEmpty = Schema.String.check(Schema.isNonEmpty())
const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
const Concurrency = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 256 }))

/** A duration such as `15m`, `90s`, `1h30m`, `7d` or `250ms`. */
export { DurationString }

/** TLS to PostgreSQL with a private CA: PEM file paths, relative to the configuration file. */
export const DatabaseTls = Schema.Struct({
  ca: NonEmpty,
  cert: Schema.optionalKey(NonEmpty),
  key: Schema.optionalKey(NonEmpty)
})

/** A database: embedded PGlite (a data directory) or PostgreSQL (a URL or its parts). */
export const DatabaseConfig = Schema.Struct({
  provider: Schema.Literals(["pglite", "postgres"]),
  path: Schema.optionalKey(NonEmpty),
  url: Schema.optionalKey(NonEmpty),
  addresses: Schema.optionalKey(Schema.Array(NonEmpty)),
  database: Schema.optionalKey(NonEmpty),
  user: Schema.optionalKey(NonEmpty),
  password: Schema.optionalKey(Schema.String),
  max_connections: Schema.optionalKey(PositiveInt),
  ssl: Schema.optionalKey(Schema.Union([Schema.Boolean, DatabaseTls])),
  prepared_statements: Schema.optionalKey(Schema.Boolean),
  direct_url: Schema.optionalKey(NonEmpty)
})
export type DatabaseConfig = typeof DatabaseConfig.Type

const Listener = {
  host: Schema.optionalKey(NonEmpty),
  port: Schema.optionalKey(Port)
}

const KeyPath = Schema.Struct({ path: NonEmpty })

const EnvValue = Schema.Union([
  Schema.String,
  Schema.Struct({ envVar: NonEmpty, default: Schema.optionalKey(Schema.String) })
])

/** Spec 8.3 (resolved in `TelemetryConfig.ts`); `prometheus` is svc's own addition. */
export const TelemetryConfig = Schema.Struct({
  enabled: Schema.optionalKey(Schema.Boolean),
  exporter: Schema.optionalKey(
    Schema.Struct({
      protocol: Schema.optionalKey(Schema.Literals(["grpc", "http/protobuf"])),
      endpoint: Schema.optionalKey(EnvValue),
      headers: Schema.optionalKey(Schema.Record(Schema.String, EnvValue)),
      insecure: Schema.optionalKey(Schema.Boolean)
    })
  ),
  resource: Schema.optionalKey(
    Schema.Struct({
      serviceNamePrefix: Schema.optionalKey(NonEmpty),
      attributes: Schema.optionalKey(
        Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number, Schema.Boolean]))
      )
    })
  ),
  sampling: Schema.optionalKey(
    Schema.Struct({ ratio: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))) })
  ),
  signals: Schema.optionalKey(
    Schema.Struct({
      traces: Schema.optionalKey(Schema.Boolean),
      metrics: Schema.optionalKey(Schema.Boolean),
      logs: Schema.optionalKey(Schema.Boolean)
    })
  ),
  http: Schema.optionalKey(Schema.Struct({ excludedPaths: Schema.optionalKey(Schema.Array(Schema.String)) })),
  proxy: Schema.optionalKey(
    Schema.Struct({
      spanAttributeLabels: Schema.optionalKey(Schema.Array(Schema.String)),
      metricDimensionLabels: Schema.optionalKey(Schema.Array(Schema.String)),
      metricDimensionValueCap: Schema.optionalKey(Schema.Int)
    })
  ),
  propagation: Schema.optionalKey(Schema.Struct({ injectOutboundDefault: Schema.optionalKey(Schema.Boolean) })),
  prometheus: Schema.optionalKey(
    Schema.Struct({
      enabled: Schema.optionalKey(Schema.Boolean),
      host: Schema.optionalKey(NonEmpty),
      port: Schema.optionalKey(Port)
    })
  )
})

/** Envelope encryption: exactly one root key source (checked when resolving). */
export const EncryptionConfig = Schema.Struct({
  root_key: Schema.optionalKey(
    Schema.Struct({
      path: Schema.optionalKey(NonEmpty),
      env: Schema.optionalKey(NonEmpty),
      value: Schema.optionalKey(NonEmpty)
    })
  ),
  reencrypt_poll_interval: Schema.optionalKey(DurationString)
})

/** An actor declared in configuration and synced into the actors table at start (spec 5.6). */
export const ConfiguredActor = Schema.Struct({
  external_id: NonEmpty,
  namespace: Schema.optionalKey(NamespacePath),
  name: Schema.optionalKey(NonEmpty),
  labels: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  annotations: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  permissions: Schema.Array(Schema.Struct({ ...Permission.fields, namespace: NamespacePattern }))
})
export type ConfiguredActor = typeof ConfiguredActor.Type

/** The whole configuration file; every key is optional and the embedded default fills the gaps. */
export const ConfigFile = Schema.Struct({
  data_dir: Schema.optionalKey(NonEmpty),
  log: Schema.optionalKey(
    Schema.Struct({
      level: Schema.optionalKey(Schema.Literals(["trace", "debug", "info", "warn", "error"])),
      format: Schema.optionalKey(Schema.Literals(["text", "json"])),
      access: Schema.optionalKey(Schema.Boolean)
    })
  ),
  api: Schema.optionalKey(Schema.Struct(Listener)),
  admin_api: Schema.optionalKey(
    Schema.Struct({
      ...Listener,
      tls: Schema.optionalKey(Schema.Struct({ cert_path: NonEmpty, key_path: NonEmpty })),
      ui: Schema.optionalKey(Schema.Struct({ initiate_session_url: Schema.optionalKey(NonEmpty) }))
    })
  ),
  public: Schema.optionalKey(
    Schema.Struct({
      ...Listener,
      base_url: Schema.optionalKey(NonEmpty),
      session_ttl: Schema.optionalKey(DurationString)
    })
  ),
  worker: Schema.optionalKey(Schema.Struct(Listener)),
  http: Schema.optionalKey(
    Schema.Struct({
      max_body_bytes: Schema.optionalKey(PositiveInt),
      drain_timeout: Schema.optionalKey(DurationString),
      shutdown_delay: Schema.optionalKey(DurationString),
      /** Tests only: answers name the door that took them (`X-Svc-Door`, docs/proxy.md). */
      door_header: Schema.optionalKey(Schema.Boolean)
    })
  ),
  database: Schema.optionalKey(DatabaseConfig),
  counter_store: Schema.optionalKey(
    Schema.Struct({
      provider: Schema.Literals(["memory", "redis", "redis-cluster"]),
      url: Schema.optionalKey(NonEmpty),
      key_prefix: Schema.optionalKey(Schema.String),
      /** Redis Cluster seed nodes, `host:port`. */
      nodes: Schema.optionalKey(Schema.Array(NonEmpty)),
      /** TLS files of a `rediss://` counter store (paths). */
      tls: Schema.optionalKey(
        Schema.Struct({ ca: NonEmpty, cert: Schema.optionalKey(NonEmpty), key: Schema.optionalKey(NonEmpty) })
      )
    })
  ),
  system_auth: Schema.optionalKey(
    Schema.Struct({
      jwt_signing_key: Schema.optionalKey(
        Schema.Struct({ public_key: Schema.optionalKey(KeyPath), private_key: Schema.optionalKey(KeyPath) })
      ),
      actors: Schema.optionalKey(Schema.Array(ConfiguredActor))
    })
  ),
  appMetrics: Schema.optionalKey(
    Schema.Struct({
      database: Schema.optionalKey(DatabaseConfig),
      resourceSnapshotInterval: Schema.optionalKey(DurationString),
      requestEvents: Schema.optionalKey(
        Schema.Struct({
          fullRequestRecording: Schema.optionalKey(Schema.Literals(["never", "always"])),
          retention: Schema.optionalKey(DurationString)
        })
      ),
      resourceSnapshots: Schema.optionalKey(Schema.Struct({ retention: Schema.optionalKey(DurationString) })),
      blobStorage: Schema.optionalKey(
        Schema.Struct({
          provider: Schema.Literals(["filesystem", "s3", "memory"]),
          path: Schema.optionalKey(NonEmpty),
          bucket: Schema.optionalKey(NonEmpty),
          endpoint: Schema.optionalKey(NonEmpty),
          region: Schema.optionalKey(NonEmpty),
          prefix: Schema.optionalKey(Schema.String),
          forcePathStyle: Schema.optionalKey(Schema.Boolean)
        })
      )
    })
  ),
  host_application: Schema.optionalKey(
    Schema.Struct({
      initiate_session_url: Schema.optionalKey(NonEmpty),
      allowed_origins: Schema.optionalKey(Schema.Array(NonEmpty))
    })
  ),
  telemetry: Schema.optionalKey(TelemetryConfig),
  encryption: Schema.optionalKey(EncryptionConfig),
  oauth2: Schema.optionalKey(
    Schema.Struct({
      clients: Schema.optionalKey(
        Schema.Array(
          Schema.Struct({
            client_id: NonEmpty,
            client_secret: Schema.Struct({
              path: Schema.optionalKey(NonEmpty),
              env: Schema.optionalKey(NonEmpty),
              value: Schema.optionalKey(NonEmpty)
            })
          })
        )
      ),
      default_token_lifetime: Schema.optionalKey(DurationString),
      refresh_sweep_interval: Schema.optionalKey(DurationString),
      authorization_timeout: Schema.optionalKey(DurationString)
    })
  ),
  outbound: Schema.optionalKey(
    Schema.Struct({
      allow_private_networks: Schema.optionalKey(Schema.Boolean),
      max_response_header_bytes: Schema.optionalKey(
        Schema.Int.check(Schema.isBetween({ minimum: 1024, maximum: 1024 * 1024 }))
      )
    })
  ),
  connections: Schema.optionalKey(Schema.Struct({ setup_ttl: Schema.optionalKey(DurationString) })),
  mcp: Schema.optionalKey(
    Schema.Struct({
      session_idle_timeout: Schema.optionalKey(DurationString),
      max_sessions: Schema.optionalKey(PositiveInt)
    })
  ),
  probes: Schema.optionalKey(
    Schema.Struct({
      poll_interval: Schema.optionalKey(DurationString),
      max_concurrency: Schema.optionalKey(Concurrency)
    })
  ),
  migrations: Schema.optionalKey(
    Schema.Struct({
      hook_timeout: Schema.optionalKey(DurationString),
      hook_memory_bytes: Schema.optionalKey(
        Schema.Int.check(Schema.isBetween({ minimum: 1024 * 1024, maximum: 256 * 1024 * 1024 }))
      ),
      hook_stack_bytes: Schema.optionalKey(
        Schema.Int.check(Schema.isBetween({ minimum: 64 * 1024, maximum: 16 * 1024 * 1024 }))
      ),
      hook_workers: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 32 })))
    })
  ),
  labels: Schema.optionalKey(
    Schema.Struct({
      consistency_check_interval: Schema.optionalKey(DurationString),
      propagation_poll_interval: Schema.optionalKey(DurationString)
    })
  ),
  rate_limits: Schema.optionalKey(Schema.Struct({ refresh_interval: Schema.optionalKey(DurationString) })),
  webhooks: Schema.optionalKey(
    Schema.Struct({
      retry_schedule: Schema.optionalKey(Schema.Array(DurationString)),
      poll_interval: Schema.optionalKey(DurationString),
      timeout: Schema.optionalKey(DurationString),
      concurrency_per_endpoint: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 64 }))),
      disable_after: Schema.optionalKey(DurationString),
      log_retention: Schema.optionalKey(DurationString)
    })
  ),
  cluster: Schema.optionalKey(
    Schema.Struct({
      runner: Schema.optionalKey(
        Schema.Struct({
          host: Schema.optionalKey(NonEmpty),
          port: Schema.optionalKey(Port),
          advertised_host: Schema.optionalKey(NonEmpty)
        })
      ),
      // Mutual TLS on the runner transport (docs/cluster.md): PEM file paths, relative to the file.
      tls: Schema.optionalKey(Schema.Struct({ ca: NonEmpty, cert: NonEmpty, key: NonEmpty })),
      shards_per_group: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 }))),
      shard_lock_refresh_interval: Schema.optionalKey(DurationString),
      shard_lock_expiration: Schema.optionalKey(DurationString),
      refresh_assignments_interval: Schema.optionalKey(DurationString),
      runner_health_check_interval: Schema.optionalKey(DurationString),
      entity_message_poll_interval: Schema.optionalKey(DurationString),
      entity_max_idle_time: Schema.optionalKey(DurationString)
    })
  )
})
export type ConfigFile = typeof ConfigFile.Type
