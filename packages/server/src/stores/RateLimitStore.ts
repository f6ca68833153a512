import {
  type AlgorithmParams,
  algorithmParams,
  retryAfterSeconds,
  slidingCounterEstimate,
  slidingCounterWaitMs,
  slidingLogWaitMs,
  tokenBucketIdleMs,
  tokenBucketRetryAfterSeconds,
  tokenBucketTokens,
  windowIndex
} from "@svc/domain/RateLimitAlgorithm"
import type { Algorithm, RateLimitMode } from "@svc/domain/RateLimitDefinition"
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ClientContext, Result } from "ioredis"
import { CoolDownStore, coolDownKey, rateLimitHashTag } from "./CoolDownStore.ts"
import {
  clientCall,
  connectRedis,
  type RedisClient,
  type RedisCounterStoreOptions,
  releaseRedis,
  type StoreUnavailable
} from "./RedisClient.ts"
import { rateLimitScript } from "./RateLimitScript.ts"
import { Telemetry } from "../telemetry/Telemetry.ts"

/** One matched rule of a request: its bucket (the caller joins the dimension values) and algorithm. */
export interface RateLimitRuleCheck {
  readonly ruleId: string
  readonly mode: RateLimitMode
  readonly bucketKey: string
  readonly algorithm: Algorithm
}

/** Every rule matched by one request through `connectionId`; rule ids are distinct. */
export interface RateLimitCheck {
  readonly connectionId: string
  readonly rules: ReadonlyArray<RateLimitRuleCheck>
  /** False: the connection's cool-down is not read (a request it does not hold back). Default true. */
  readonly coolDown?: boolean | undefined
}

/** A cool-down key no connection has (ids never hold `-` alone): read when a check ignores cool-downs. */
const noCoolDownKey = coolDownKey("-")

/** A rule's verdict before this request was counted; `retryAfterSeconds` only when not allowed. */
export interface RateLimitRuleResult {
  readonly ruleId: string
  readonly mode: RateLimitMode
  readonly allowed: boolean
  readonly retryAfterSeconds?: number
  /** Requests the bucket still admits after this one was (or was not) counted; whole tokens for a bucket. */
  readonly remaining: number
}

/** The outcome of one check: `admitted` when no enforce rule rejects and no cool-down is running. */
export interface RateLimitDecision {
  /** The store's clock at the check (epoch ms): Redis `TIME` in production. */
  readonly now: number
  /** End of the connection's running cool-down (epoch ms). */
  readonly coolDownUntil?: number
  readonly admitted: boolean
  readonly results: ReadonlyArray<RateLimitRuleResult>
}

/** Options of {@link RateLimitStore.layerRedis}: the counter store's Redis settings. */
export interface RedisRateLimitStoreOptions extends RedisCounterStoreOptions {
  /**
   * Tests only: `"effect"` passes `Clock.currentTimeMillis` into the script so `TestClock` drives
   * it. Default `"redis"`: the script reads Redis `TIME`, the one clock every process shares.
   */
  readonly clock?: "redis" | "effect" | undefined
}

const kindTag = { fixed_window: "fw", sliding_counter: "sc", sliding_log: "sl", token_bucket: "tb" } as const

/** The key of a rule's bucket state; window algorithms key by window so a changed window starts afresh. */
export const ruleStateKey = (rule: RateLimitRuleCheck, params: AlgorithmParams): string => {
  const shape = params.kind === "token_bucket" || params.kind === "sliding_log" ? "" : `:${params.windowMs}`
  return `rate-limit:${rateLimitHashTag}:${rule.ruleId}:${kindTag[params.kind]}${shape}:${rule.bucketKey}`
}

const parsed = new WeakMap<Algorithm, AlgorithmParams>()

/** The algorithm's parameters, parsed once per (cached, long-lived) rule definition. */
const paramsOf = (algorithm: Algorithm): AlgorithmParams => {
  let params = parsed.get(algorithm)
  if (params === undefined) {
    params = algorithmParams(algorithm)
    parsed.set(algorithm, params)
  }
  return params
}

const paramPair = (params: AlgorithmParams): readonly [number, number] =>
  params.kind === "token_bucket" ? [params.capacity, params.refillPerSecond] : [params.windowMs, params.limit]

const scriptArgs = new WeakMap<AlgorithmParams, readonly [string, string, string]>()

/** A rule's kind tag and parameter pair as the script's arguments, built once per parsed algorithm. */
const argsOf = (params: AlgorithmParams): readonly [string, string, string] => {
  let args = scriptArgs.get(params)
  if (args === undefined) {
    const [a, b] = paramPair(params)
    args = [kindTag[params.kind], String(a), String(b)]
    scriptArgs.set(params, args)
  }
  return args
}

/** One rule's raw outcome, as the script answers it: allowed, retry seconds (0 when allowed), remaining. */
type RawOutcome = readonly [allowed: boolean, retry: number, remaining: number]

const decision = (
  request: RateLimitCheck,
  now: number,
  coolDownUntil: number | undefined,
  admitted: boolean,
  outcomes: ReadonlyArray<RawOutcome>
): RateLimitDecision => ({
  now,
  ...(coolDownUntil === undefined ? {} : { coolDownUntil }),
  admitted,
  results: request.rules.map((rule, i) => {
    const [allowed, retry, remaining] = outcomes[i]!
    return {
      ruleId: rule.ruleId,
      mode: rule.mode,
      allowed,
      ...(allowed ? {} : { retryAfterSeconds: retry }),
      remaining
    }
  })
})

type MemoryState =
  | { readonly kind: "fixed_window"; readonly index: number; readonly count: number }
  | { readonly kind: "sliding_counter"; readonly index: number; readonly current: number; readonly previous: number }
  | { readonly kind: "sliding_log"; readonly log: SlidingLog }
  | { readonly kind: "token_bucket"; readonly tokens: number; readonly at: number }

type Entry = { readonly state: MemoryState; readonly expiresAt: number }

/** A rule evaluated on the state before this request; `commit` counts it (or not) and answers `remaining`. */
interface Evaluated {
  readonly allowed: boolean
  readonly retry: number
  readonly commit: (consume: boolean) => number
}

/** The memory store's evaluation: `@svc/domain/RateLimitAlgorithm`, as the Redis script runs it. */
const evaluate = (
  params: AlgorithmParams,
  state: MemoryState | undefined,
  now: number,
  save: (state: MemoryState, ttlMs: number) => void
): Evaluated => {
  switch (params.kind) {
    case "fixed_window": {
      const { limit, windowMs } = params
      const index = windowIndex(now, windowMs)
      const count = state?.kind === "fixed_window" && state.index === index ? state.count : 0
      const allowed = count < limit
      return {
        allowed,
        retry: allowed ? 0 : retryAfterSeconds((index + 1) * windowMs - now),
        commit: (consume) => {
          if (!consume) return Math.max(0, limit - count)
          save({ kind: "fixed_window", index, count: count + 1 }, (index + 1) * windowMs - now)
          return Math.max(0, limit - count - 1)
        }
      }
    }
    case "sliding_counter": {
      const { limit, windowMs } = params
      const index = windowIndex(now, windowMs)
      const elapsed = now - index * windowMs
      const stored = state?.kind === "sliding_counter" ? state : undefined
      const current = stored?.index === index ? stored.current : 0
      const previous = stored?.index === index ? stored.previous : stored?.index === index - 1 ? stored.current : 0
      const allowed = slidingCounterEstimate(current, previous, elapsed, windowMs) < limit
      return {
        allowed,
        retry: allowed ? 0 : retryAfterSeconds(slidingCounterWaitMs(current, previous, elapsed, windowMs, limit)),
        commit: (consume) => {
          const counted = consume ? current + 1 : current
          if (consume)
            save({ kind: "sliding_counter", index, current: counted, previous }, (index + 2) * windowMs - now)
          return Math.max(0, limit - slidingCounterEstimate(counted, previous, elapsed, windowMs))
        }
      }
    }
    case "sliding_log": {
      const { limit, windowMs } = params
      // entries leave the window once now − entry >= window (dropping them is right whatever
      // this request's outcome, so it happens before the commit)
      const log = state?.kind === "sliding_log" ? state.log : new SlidingLog()
      const count = log.live(now, windowMs)
      const allowed = count < limit
      return {
        allowed,
        retry: allowed ? 0 : retryAfterSeconds(slidingLogWaitMs(log.at(count - limit), now, windowMs)),
        commit: (consume) => {
          if (consume) {
            log.add(now)
            save(state?.kind === "sliding_log" ? state : { kind: "sliding_log", log }, windowMs)
          }
          return Math.max(0, limit - (consume ? count + 1 : count))
        }
      }
    }
    case "token_bucket": {
      const { capacity, refillPerSecond } = params
      const stored = state?.kind === "token_bucket" ? state : undefined
      const tokens = tokenBucketTokens(stored, now, capacity, refillPerSecond)
      const allowed = tokens >= 1
      return {
        allowed,
        retry: allowed ? 0 : tokenBucketRetryAfterSeconds(tokens, refillPerSecond),
        commit: (consume) => {
          // a bucket without a whole token has nothing to give, also to an observe rule
          if (!consume || tokens < 1) return Math.max(0, Math.floor(tokens))
          const left = tokens - 1
          save({ kind: "token_bucket", tokens: left, at: now }, tokenBucketIdleMs(left, capacity, refillPerSecond))
          return Math.floor(left)
        }
      }
    }
  }
}

/**
 * A sliding log's counted times, ascending, in place: the live entries are `times[head…]`. Entries
 * leave from the front as the window passes and arrive at the back, so a check costs O(1)
 * amortised however large the limit (copying the window per request made a generous sliding-log
 * rule cost O(limit) per request and as much garbage).
 */
class SlidingLog {
  private times: Array<number> = []
  private head = 0

  /** Drops the entries that left the window (`now − entry >= windowMs`); answers how many remain. */
  live(now: number, windowMs: number): number {
    const times = this.times
    while (this.head < times.length && times[this.head]! <= now - windowMs) this.head++
    if (this.head > 64 && this.head * 2 > times.length) {
      this.times = times.slice(this.head)
      this.head = 0
    }
    return this.times.length - this.head
  }

  /** The `i`-th live entry, oldest first. */
  at(i: number): number {
    return this.times[this.head + i]!
  }

  /** Counts `at`, kept in order (a clock that stepped back inserts before later entries). */
  add(at: number): void {
    const times = this.times
    let i = times.length
    while (i > this.head && times[i - 1]! > at) i--
    if (i === times.length) times.push(at)
    else times.splice(i, 0, at)
  }
}

const sweepEvery = 1024

/**
 * Rate-limit counters (spec 2.8, 4.6): one `check` per request reads the connection's cool-down
 * and evaluates every matched rule, then commits — all enforce rules count only if the request is
 * admitted (no enforce rule rejects, no cool-down runs), observe rules count every match. On Redis
 * that is one script call (one round trip) on Redis `TIME`; failures are `StoreUnavailable`.
 */
export class RateLimitStore extends Context.Service<
  RateLimitStore,
  {
    check(request: RateLimitCheck): Effect.Effect<RateLimitDecision, StoreUnavailable>
  }
>()("@svc/server/stores/RateLimitStore") {
  /** In-process counters on `Clock` (so `TestClock` drives them), reading the in-process cool-downs. */
  static readonly layerMemory: Layer.Layer<RateLimitStore, never, CoolDownStore> = Layer.effect(
    RateLimitStore,
    Effect.gen(function* () {
      const coolDowns = yield* CoolDownStore
      const entries = new Map<string, Entry>()
      let checks = 0

      const sweep = (now: number) => {
        if (++checks < sweepEvery) return
        checks = 0
        for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key)
      }

      const evaluateAll = (request: RateLimitCheck, coolDownUntil: number | undefined, now: number) => {
        sweep(now)
        const evaluated = request.rules.map((rule) => {
          const params = paramsOf(rule.algorithm)
          const key = ruleStateKey(rule, params)
          const entry = entries.get(key)
          const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined
          return evaluate(params, state, now, (next, ttlMs) =>
            entries.set(key, { state: next, expiresAt: now + ttlMs })
          )
        })
        const admitted =
          coolDownUntil === undefined &&
          request.rules.every((rule, i) => rule.mode === "observe" || evaluated[i]!.allowed)
        const outcomes = evaluated.map(
          (rule, i): RawOutcome => [
            rule.allowed,
            rule.retry,
            rule.commit(admitted || request.rules[i]!.mode === "observe")
          ]
        )
        return decision(request, now, coolDownUntil, admitted, outcomes)
      }

      return RateLimitStore.of({
        check: (request) =>
          Effect.flatMap(
            request.coolDown === false ? Effect.succeedNone : coolDowns.get(request.connectionId),
            (until) =>
              Effect.map(Clock.currentTimeMillis, (now) =>
                evaluateAll(request, Option.getOrUndefined(Option.filter(until, (end) => end > now)), now)
              )
          )
      })
    })
  )

  /** Redis through ioredis (one Lua script, EVALSHA), scoped like `CounterStore.layerRedis`. */
  static readonly layerRedis = (options: RedisRateLimitStoreOptions): Layer.Layer<RateLimitStore, StoreUnavailable> =>
    Layer.effect(
      RateLimitStore,
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const client = yield* Effect.acquireRelease(
          connectRedis({ connectionName: "svc-rate-limit-store", ...options }, context),
          releaseRedis
        )
        return makeRedisRateLimitStore(client, options.clock ?? "redis", (yield* Telemetry).tracing, options)
      })
    )
}

// The script's command, as ioredis documents declaring custom commands (`defineCommand`).
declare module "ioredis" {
  interface RedisCommander<Context extends ClientContext = { type: "default" }> {
    /** The number of keys, the keys, then the arguments. */
    svcRateLimitCheck(...numKeysKeysAndArgs: ReadonlyArray<string | number>): Result<unknown, Context>
  }
}

/**
 * The Redis store on a connected client, one Redis or a cluster (exported for tests that watch the
 * client's commands): defines the script on it; each `check` is one `EVALSHA` (ioredis sends
 * `EVAL` the first time on a connection and after a `NOSCRIPT`). Every key of a check carries the
 * rate-limit hash tag, so on a cluster the call goes to the one node owning that slot.
 */
export const makeRedisRateLimitStore = (
  client: RedisClient,
  clock: "redis" | "effect",
  traced = false,
  options: Pick<RedisCounterStoreOptions, "commandTimeoutMillis"> = {}
): RateLimitStore["Service"] => {
  client.defineCommand("svcRateLimitCheck", { lua: rateLimitScript })
  const attempt = clientCall(client, options)
  const clockArg = clock === "redis" ? Effect.succeed("") : Effect.map(Clock.currentTimeMillis, String)

  // Plain code, not a generator: one check runs per proxied request (issue 31, allocation).
  const checkWith = (
    request: RateLimitCheck,
    clockValue: string
  ): Effect.Effect<RateLimitDecision, StoreUnavailable> => {
    // The script's numkeys, its keys, then its arguments, in the one array the command is sent with.
    const rules = request.rules
    const argv: Array<string | number> = [1 + rules.length]
    argv.push(request.coolDown === false ? noCoolDownKey : coolDownKey(request.connectionId))
    for (const rule of rules) argv.push(ruleStateKey(rule, paramsOf(rule.algorithm)))
    argv.push(clockValue)
    for (const rule of rules) {
      const [kind, a, b] = argsOf(paramsOf(rule.algorithm))
      argv.push(rule.mode === "observe" ? "1" : "0", kind, a, b)
    }
    const call = attempt("rateLimit.check", () => client.svcRateLimitCheck(...argv))
    // Telemetry (spec 8.3): a counter-store span with the key names, never a value; none when off.
    const reply = traced
      ? Effect.withSpan(call, "counter_store.rate_limit_check", {
          kind: "client",
          attributes: {
            "db.system.name": "redis",
            "db.operation.name": "EVALSHA",
            "svc.counter_store.keys": argv.slice(1, 2 + rules.length).join(" ")
          }
        })
      : call
    return Effect.flatMap(reply, (value) => decode(request, value))
  }

  return RateLimitStore.of({
    check: (request) =>
      clock === "redis" ? checkWith(request, "") : Effect.flatMap(clockArg, (value) => checkWith(request, value))
  })
}

const decode = (request: RateLimitCheck, reply: unknown): Effect.Effect<RateLimitDecision> => {
  const values = Array.isArray(reply) ? reply : []
  const numbers = values.map((value, i) => (i === 1 && value === null ? 0 : value))
  if (values.length !== 3 + 3 * request.rules.length || !numbers.every(Number.isSafeInteger))
    return Effect.die(new Error(`malformed rate-limit script reply: ${JSON.stringify(reply)}`))
  const outcomes = request.rules.map(
    (_, i): RawOutcome => [numbers[3 + 3 * i] === 1, numbers[4 + 3 * i] as number, numbers[5 + 3 * i] as number]
  )
  const until = values[1] === null ? undefined : (values[1] as number)
  return Effect.succeed(decision(request, numbers[0] as number, until, numbers[2] === 1, outcomes))
}
