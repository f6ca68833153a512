/**
 * The ioredis client of the Redis counter stores: one `Redis`, or a `Cluster` from seed nodes,
 * with the fail-fast settings every store shares, TLS from PEM files, and start-up failures named
 * in one line.
 */
import * as fs from "node:fs"
import { type Context, Duration, Effect, Redacted, Schema } from "effect"
import type { Cluster, Redis, RedisOptions } from "ioredis"

/** ioredis, loaded by the first connect: a process whose stores are all in memory never loads it. */
interface IoRedis {
  readonly Redis: typeof Redis
  readonly Cluster: typeof Cluster
}

/** The counter store could not be reached or did not answer in time; callers pick fail-open or 503. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  operation: Schema.String,
  cause: Schema.Defect(),
  /** Why, in one line without secrets (set when connecting: refused, TLS verification, …). */
  reason: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    return `the counter store is unavailable (${this.operation}${this.reason === undefined ? "" : `: ${this.reason}`})`
  }
}

/** TLS to Redis (`rediss://`): PEM file paths; `ca` verifies the server, `cert`/`key` authenticate svc. */
export interface RedisTlsFiles {
  readonly ca?: string | undefined
  readonly cert?: string | undefined
  readonly key?: string | undefined
}

/** A Redis Cluster seed node. */
export interface RedisNode {
  readonly host: string
  readonly port: number
}

/** Options of {@link CounterStore.layerRedis}. */
export interface RedisCounterStoreOptions {
  /**
   * `redis[s]://[user[:password]@]host:port`. With `nodes` (Redis Cluster) only its scheme, user
   * and password are used, for every node.
   */
  readonly url: string | Redacted.Redacted<string>
  /** Seed nodes of a Redis Cluster: present, the client is an ioredis `Cluster` following MOVED/ASK. */
  readonly nodes?: ReadonlyArray<RedisNode> | undefined
  /** TLS files for a `rediss://` URL (without them a `rediss` URL verifies against the system CAs). */
  readonly tls?: RedisTlsFiles | undefined
  /** Prepended to every key (e.g. `svc:`); isolates deployments and tests sharing one Redis. */
  readonly keyPrefix: string
  /** Bound on establishing the connection, also at layer build. Default 2000 ms. */
  readonly connectTimeoutMillis?: number | undefined
  /** Bound on each command. Default 1000 ms. */
  readonly commandTimeoutMillis?: number | undefined
  /** `CLIENT SETNAME` of the connection, for operators. Default `svc-counter-store`. */
  readonly connectionName?: string | undefined
  /** False: a lost connection of a single-node client ends (`end` event) instead of reconnecting. Default true. */
  readonly reconnect?: boolean | undefined
}

/** A connected client: one Redis, or a Redis Cluster (same commands, keys routed by slot). */
export type RedisClient = Redis | Cluster

/**
 * A call on a client as an Effect; a failure is `StoreUnavailable`. On a cluster a command may be
 * retried across nodes (MOVED, ASK, a failover), so the whole call is also bounded, by twice the
 * command timeout.
 */
export const clientCall = (
  client: RedisClient,
  options: Pick<RedisCounterStoreOptions, "commandTimeoutMillis">
): (<A>(operation: string, run: () => Promise<A>) => Effect.Effect<A, StoreUnavailable>) => {
  const deadlineMillis = 2 * (options.commandTimeoutMillis ?? defaultCommandTimeoutMillis)
  const deadline = Duration.millis(deadlineMillis)
  return <A>(operation: string, run: () => Promise<A>) => {
    const call = Effect.tryPromise({ try: run, catch: (cause) => new StoreUnavailable({ operation, cause }) })
    return client.isCluster
      ? Effect.timeoutOrElse(call, {
          duration: deadline,
          orElse: () =>
            Effect.fail(
              new StoreUnavailable({
                operation,
                cause: new Error(`no answer within ${deadlineMillis} ms`),
                reason: `no answer within ${deadlineMillis} ms`
              })
            )
        })
      : call
  }
}

/**
 * Whether the store answers: `PING`; on a cluster, `CLUSTER INFO` must say `cluster_state:ok` with
 * every slot served by a healthy master, and every master the client knows must answer `PING`.
 */
export const pingClient = async (client: RedisClient): Promise<void> => {
  if (!client.isCluster) {
    await client.ping()
    return
  }
  const masters = (client as Cluster).nodes("master")
  if (masters.length === 0) throw new Error("no cluster master is known")
  const info = String(await masters[0]!.cluster("INFO"))
  if (!/^cluster_state:ok\s*$/m.test(info)) throw new Error("cluster state is not ok")
  if (!/^cluster_slots_ok:16384\s*$/m.test(info)) throw new Error("some cluster slots are not served")
  await Promise.all(masters.map((node) => node.ping()))
}

/**
 * Closes a client: `QUIT` (at most 2 s), then the socket. Never fails: with Redis gone `QUIT`
 * rejects at once ("Stream isn't writeable"), and a shutdown must still end cleanly.
 */
export const releaseRedis = (client: RedisClient): Effect.Effect<void> =>
  Effect.tryPromise(() => client.quit()).pipe(
    Effect.timeout(Duration.seconds(2)),
    Effect.ignore,
    Effect.ensuring(Effect.sync(() => client.disconnect()))
  )

const defaultConnectTimeoutMillis = 2000
const defaultCommandTimeoutMillis = 1000

/** Node's certificate verification failures, named as TLS problems in the start-up line. */
const tlsCodes = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_SSL_WRONG_VERSION_NUMBER"
])

/** One line naming why a connection failed; never the URL or a password. */
export const describeRedisError = (error: unknown, secrets: ReadonlyArray<string> = []): string => {
  // a cluster's "Failed to refresh slots cache." carries the seed's own failure: name that one
  if (typeof error === "object" && error !== null && "lastNodeError" in error && error.lastNodeError instanceof Error) {
    return describeRedisError(error.lastNodeError, secrets)
  }
  const message = error instanceof Error ? error.message : String(error)
  const code =
    typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
      ? error.code
      : undefined
  const tls = code !== undefined && (tlsCodes.has(code) || code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL"))
  let line = `${tls ? "TLS verification failed: " : ""}${message}${code === undefined || message.includes(code) ? "" : ` (${code})`}`
  for (const secret of secrets) if (secret !== "") line = line.split(secret).join("***")
  return line.replace(/\s+/g, " ").trim()
}

/** The TLS options of a `rediss` connection: the configured PEM files, read now. */
const tlsOptions = (files: RedisTlsFiles | undefined): NonNullable<RedisOptions["tls"]> => {
  const read = (key: keyof RedisTlsFiles) => {
    const file = files?.[key]
    if (file === undefined) return undefined
    try {
      return fs.readFileSync(file)
    } catch (cause) {
      const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : "unreadable"
      throw new Error(`cannot read counter_store.tls.${key} ${file} (${code})`)
    }
  }
  const ca = read("ca")
  const cert = read("cert")
  const key = read("key")
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key })
  }
}

/** The scheme, user and password of a cluster's URL (its host is ignored: the seed nodes say where). */
const clusterAuth = (url: string) => {
  const parsed = new URL(url)
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new Error("counter_store.url must be a redis:// or rediss:// URL")
  }
  return {
    tls: parsed.protocol === "rediss:",
    ...(parsed.username === "" ? {} : { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password === "" ? {} : { password: decodeURIComponent(parsed.password) })
  }
}

/**
 * A client with the store's fail-fast settings (no offline queue, no retries per request, bounded
 * connect and commands): a `Redis`, or with `nodes` a `Cluster` routing each key by its slot,
 * following MOVED/ASK, writing to masters only, reconnecting in the background.
 */
const makeClient = ({ Cluster, Redis }: IoRedis, options: RedisCounterStoreOptions, url: string): RedisClient => {
  const connectTimeout = options.connectTimeoutMillis ?? defaultConnectTimeoutMillis
  const common = {
    connectionName: options.connectionName ?? "svc-counter-store",
    connectTimeout,
    commandTimeout: options.commandTimeoutMillis ?? defaultCommandTimeoutMillis,
    maxRetriesPerRequest: 0
  } satisfies RedisOptions
  if (options.nodes === undefined) {
    const tls = url.toLowerCase().startsWith("rediss:") ? { tls: tlsOptions(options.tls) } : {}
    return new Redis(url, {
      ...common,
      ...tls,
      keyPrefix: options.keyPrefix,
      lazyConnect: true,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      ...(options.reconnect === false ? { retryStrategy: () => null } : {})
    })
  }
  return new Cluster(
    options.nodes.map((node) => ({ host: node.host, port: node.port })),
    {
      keyPrefix: options.keyPrefix,
      lazyConnect: true,
      enableOfflineQueue: false,
      // not on a cluster: ioredis's auto-pipelines retried after an ASK leave the rate-limit
      // script's NOSCRIPT unrecovered on the new owner (RateLimitStore.test.ts, the resharding test)
      enableAutoPipelining: false,
      scaleReads: "master",
      slotsRefreshTimeout: connectTimeout,
      // the slot map also follows a failover no command has run into yet (healthz, idle slots)
      slotsRefreshInterval: 5000,
      // the client reconnects in the background, at most every 2 s, never giving up
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
      // host names reach the TLS check as configured (no resolution to an address first)
      dnsLookup: (address, callback) => callback(null, address),
      redisOptions: nodeOptions(options, url)
    }
  )
}

/** The connection options of every node of a cluster: timeouts, the URL's credentials, TLS. */
const nodeOptions = (options: RedisCounterStoreOptions, url: string) => {
  const { tls, ...auth } = clusterAuth(url)
  return {
    connectionName: options.connectionName ?? "svc-counter-store",
    connectTimeout: options.connectTimeoutMillis ?? defaultConnectTimeoutMillis,
    commandTimeout: options.commandTimeoutMillis ?? defaultCommandTimeoutMillis,
    maxRetriesPerRequest: 0,
    ...auth,
    ...(tls ? { tls: tlsOptions(options.tls) } : {})
  } satisfies RedisOptions
}

/**
 * Why the first seed of a cluster refuses a connection: the cluster client reports only "Failed
 * to refresh slots cache" after a node's TLS or authentication failure, so one plain connection
 * to the seed, with the same options, names it.
 */
const probeSeed = async (
  { Redis }: IoRedis,
  options: RedisCounterStoreOptions,
  url: string,
  secrets: ReadonlyArray<string>
) => {
  const seed = options.nodes?.[0]
  if (seed === undefined) return undefined
  let reason: string | undefined
  const probe = new Redis({
    ...nodeOptions(options, url),
    host: seed.host,
    port: seed.port,
    lazyConnect: true,
    enableOfflineQueue: false,
    retryStrategy: () => null
  })
  probe.on("error", (error: Error) => {
    const line = describeRedisError(error, secrets)
    if (reason === undefined || !genericErrors.has(line)) reason = line
  })
  try {
    await probe.connect()
    await probe.cluster("INFO")
  } catch (cause) {
    reason ??= describeRedisError(cause, secrets)
  } finally {
    probe.disconnect()
  }
  return reason
}

/** What ioredis reports after a connection's actual failure. */
const genericErrors: ReadonlySet<string> = new Set([
  "Connection is closed.",
  "None of startup nodes is available",
  "Failed to refresh slots cache."
])

/** Connects a client (a `Redis`, or with `nodes` a `Cluster`) with the store's fail-fast settings. */
export const connectRedis = (options: RedisCounterStoreOptions, context: Context.Context<never>) => {
  const url = Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url
  const secrets = URL.canParse(url) ? [decodeURIComponent(new URL(url).password)] : []
  const connectTimeout = options.connectTimeoutMillis ?? defaultConnectTimeoutMillis
  let lastError: string | undefined
  let client: RedisClient | undefined
  const connect = Effect.tryPromise({
    try: async () => {
      const ioredis = await import("ioredis")
      const connecting = makeClient(ioredis, options, url)
      client = connecting
      const onError = (error: Error) => {
        const line = describeRedisError(error, secrets)
        // a closed connection follows its cause (refused, TLS, …): the cause stays the reason
        if (line === lastError || (lastError !== undefined && genericErrors.has(line))) return
        lastError = line
        Effect.runForkWith(context)(Effect.logWarning("counter store connection error", line))
      }
      connecting.on("error", onError)
      if (connecting.isCluster) connecting.on("node error", onError)
      connecting.on("ready", () => {
        lastError = undefined
      })
      try {
        await connecting.connect()
      } catch (cause) {
        if (connecting.isCluster && (lastError === undefined || genericErrors.has(lastError))) {
          lastError = (await probeSeed(ioredis, options, url, secrets)) ?? lastError
        }
        throw cause
      }
      return connecting
    },
    catch: (cause) =>
      new StoreUnavailable({ operation: "connect", cause, reason: lastError ?? describeRedisError(cause, secrets) })
  })
  // A cluster whose slots never settle would keep `connect` pending: the start is bounded too.
  return connect.pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(2 * connectTimeout + 1000),
      orElse: () =>
        Effect.fail(
          new StoreUnavailable({
            operation: "connect",
            cause: new Error("connect timed out"),
            reason: lastError ?? `not ready within ${2 * connectTimeout + 1000} ms`
          })
        )
    }),
    Effect.tapError(() => Effect.sync(() => client?.disconnect()))
  )
}
