/**
 * Redis memory per active rate-limit bucket (docs/operations.md "Sizing"): a private
 * `redis-server` (no persistence), svc's own rate-limit script (`makeRedisRateLimitStore`, one
 * `EVALSHA` per check, the keys svc writes with a `key_prefix`), and for each algorithm `buckets`
 * distinct bucket keys each hit `hits` times. Reported per bucket: the growth of `INFO memory`
 * `used_memory` divided by the bucket count, and `MEMORY USAGE <key> SAMPLES 0` of one bucket key.
 * The server is flushed between rows. Run: `node test/bench/RedisMemory.ts [buckets]` (default
 * 10000). Loopback only; the server is stopped at the end.
 */
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { Redis } from "ioredis"
import type { Algorithm } from "@svc/domain/RateLimitDefinition"
import { makeRedisRateLimitStore, type RateLimitRuleCheck, ruleStateKey } from "@svc/server/stores/RateLimitStore"
import { algorithmParams } from "@svc/domain/RateLimitAlgorithm"
import { startRedisServer } from "../support/RedisServer.ts"

const buckets = Number(process.argv[2] ?? 10_000)
const keyPrefix = "svc:"

const base32 = (bytes: number) =>
  Array.from(randomBytes(bytes), (b) => "abcdefghijklmnopqrstuvwxyz234567"[b % 32]).join("")
const id = (prefix: string) => `${prefix}_${base32(26)}`

interface Row {
  readonly label: string
  readonly algorithm: Algorithm
  /** Requests counted per bucket. */
  readonly hits: number
  /** Bucket keys of this row when not the command line's (a large log is slow to fill). */
  readonly buckets?: number
}

const rows: ReadonlyArray<Row> = [
  { label: "fixed_window (1m, limit 100)", algorithm: { fixed_window: { window: "1m", limit: 100 } }, hits: 1 },
  {
    label: "sliding_window counter (1m, limit 100)",
    algorithm: { sliding_window: { window: "1m", limit: 100, mode: "counter" } },
    hits: 1
  },
  {
    label: "token_bucket (capacity 100, refill 10/s)",
    algorithm: { token_bucket: { capacity: 100, refill_rate: 10 } },
    hits: 1
  },
  {
    label: "sliding_window log (1m, limit 100), 1 request in the window",
    algorithm: { sliding_window: { window: "1m", limit: 100, mode: "log" } },
    hits: 1
  },
  {
    label: "sliding_window log (1m, limit 100), 10 requests in the window",
    algorithm: { sliding_window: { window: "1m", limit: 100, mode: "log" } },
    hits: 10
  },
  {
    label: "sliding_window log (1m, limit 100), 100 requests (full)",
    algorithm: { sliding_window: { window: "1m", limit: 100, mode: "log" } },
    hits: 100
  },
  {
    // Past zset-max-listpack-entries (128 by default) a sorted set is a skiplist.
    label: "sliding_window log (1m, limit 1000), 1000 requests (full)",
    algorithm: { sliding_window: { window: "1m", limit: 1000, mode: "log" } },
    hits: 1000,
    buckets: 200
  }
]

const usedMemory = async (client: Redis) => {
  const info = await client.info("memory")
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? Number.NaN)
}

const main = async () => {
  const redis = await startRedisServer()
  const client = new Redis(redis.url, { keyPrefix, enableAutoPipelining: true, maxRetriesPerRequest: 0 })
  const plain = new Redis(redis.url)
  try {
    const version = /redis_version:(\S+)/.exec(await plain.info("server"))?.[1]
    console.log(`redis ${version}, ${buckets} bucket keys per row unless stated, key_prefix "${keyPrefix}"`)
    console.log("| Algorithm | Requests per bucket | used_memory growth per bucket | MEMORY USAGE of one key |")
    console.log("|---|---|---|---|")
    const store = makeRedisRateLimitStore(client, "redis")
    for (const row of rows) {
      await plain.flushall()
      const ruleId = id("rl")
      const count = row.buckets ?? buckets
      const connections = Array.from({ length: count }, () => id("cxn"))
      const rule = (connectionId: string): RateLimitRuleCheck => ({
        ruleId,
        mode: "enforce",
        // The bucket of `dimensions: [connection]`, as RateLimitMatch builds it.
        bucketKey: JSON.stringify([["connection", connectionId]]),
        algorithm: row.algorithm
      })
      // The script, loaded once, and the allocator settled before the baseline.
      await Effect.runPromise(store.check({ connectionId: id("cxn"), rules: [rule(id("cxn"))], coolDown: false }))
      await plain.flushall()
      const before = await usedMemory(plain)
      for (let hit = 0; hit < row.hits; hit++) {
        for (let start = 0; start < count; start += 500) {
          await Promise.all(
            connections
              .slice(start, start + 500)
              .map((connectionId) =>
                Effect.runPromise(store.check({ connectionId, rules: [rule(connectionId)], coolDown: false }))
              )
          )
        }
      }
      const after = await usedMemory(plain)
      const keys = await plain.dbsize()
      if (keys !== count) throw new Error(`${row.label}: ${keys} keys, expected ${count}`)
      const sample = `${keyPrefix}${ruleStateKey(rule(connections[0]!), algorithmParams(row.algorithm))}`
      const usage = Number(await plain.call("MEMORY", "USAGE", sample, "SAMPLES", "0"))
      console.log(
        `| ${row.label}${row.buckets === undefined ? "" : ` (${count} buckets)`} | ${row.hits} | ${((after - before) / count).toFixed(0)} B | ${usage} B (key ${sample.length} chars) |`
      )
    }
  } finally {
    client.disconnect()
    plain.disconnect()
    await redis.stop()
  }
}

await main()
