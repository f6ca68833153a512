import { type AlgorithmParams, algorithmParams } from "@svc/domain/RateLimitAlgorithm"
import type { Algorithm, RateLimitMode } from "@svc/domain/RateLimitDefinition"
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ClientContext, Result } from "ioredis"
import { type KnownCoolDowns, subscribeCoolDowns } from "./CoolDownFeed.ts"
import { CoolDownStore, coolDownKey, rateLimitHashTag } from "./CoolDownStore.ts"
import {
  clientCall,
  connectRedis,
  type RedisClient,
  type RedisCounterStoreOptions,
  releaseRedis,
  type StoreUnavailable
} from "./RedisClient.ts"
import { evaluate, type MemoryState } from "./RateLimitMemory.ts"
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

type Entry = { readonly state: MemoryState; readonly expiresAt: number }

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
        const clock = options.clock ?? "redis"
        // The published cool-downs pushed to this process (on Redis's clock only: a test's injected
        // clock is not the one the known ends are kept on).
        const known = clock === "redis" ? yield* subscribeCoolDowns(options) : undefined
        return makeRedisRateLimitStore(client, clock, (yield* Telemetry).tracing, options, known)
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
 * `EVAL` the first time on a connection and after a `NOSCRIPT`), except a check that counts no
 * rule while `known` (the published cool-downs pushed to this process) knows its connection's
 * cool-down: that one makes no round trip. Every key of a check carries the
 * rate-limit hash tag, so on a cluster the call goes to the one node owning that slot.
 */
export const makeRedisRateLimitStore = (
  client: RedisClient,
  clock: "redis" | "effect",
  traced = false,
  options: Pick<RedisCounterStoreOptions, "commandTimeoutMillis"> = {},
  known?: KnownCoolDowns | undefined
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
    if (known === undefined || request.coolDown === false)
      return Effect.flatMap(reply, (value) => decode(request, value))
    // What the store read of the cool-down is kept for the next checks that count no rule.
    const mark = known.mark()
    return Effect.flatMap(reply, (value) =>
      Effect.map(decode(request, value), (decided) => {
        const at = Date.now()
        const until = decided.coolDownUntil === undefined ? 0 : at + (decided.coolDownUntil - decided.now)
        known.read(mark, request.connectionId, until, at)
        return decided
      })
    )
  }

  /** A check that counts no rule, answered from the known cool-downs; undefined: ask the store. */
  const fromKnown = (request: RateLimitCheck): Effect.Effect<RateLimitDecision> | undefined => {
    if (known === undefined || request.rules.length > 0 || request.coolDown === false) return undefined
    const now = Date.now()
    const until = known.known(request.connectionId, now)
    if (until === undefined) return undefined
    return Effect.succeed(
      until > now ? { now, coolDownUntil: until, admitted: false, results: [] } : { now, admitted: true, results: [] }
    )
  }

  const check = (request: RateLimitCheck) =>
    clock === "redis" ? checkWith(request, "") : Effect.flatMap(clockArg, (value) => checkWith(request, value))
  return RateLimitStore.of({
    // What is known is looked up when the check runs, not when it is built.
    check: known === undefined ? check : (request) => Effect.suspend(() => fromKnown(request) ?? check(request))
  })
}

const decode = (request: RateLimitCheck, reply: unknown): Effect.Effect<RateLimitDecision> => {
  // One pass over the reply (one check per proxied request): no intermediate arrays.
  const rules = request.rules
  const malformed = () => Effect.die(new Error(`malformed rate-limit script reply: ${JSON.stringify(reply)}`))
  if (!Array.isArray(reply) || reply.length !== 3 + 3 * rules.length) return malformed()
  const now = reply[0]
  const until = reply[1] === null ? undefined : reply[1]
  if (!Number.isSafeInteger(now) || !(until === undefined || Number.isSafeInteger(until))) return malformed()
  if (!Number.isSafeInteger(reply[2])) return malformed()
  const results: Array<RateLimitRuleResult> = []
  for (let i = 0; i < rules.length; i++) {
    const allowed = reply[3 + 3 * i]
    const retry = reply[4 + 3 * i]
    const remaining = reply[5 + 3 * i]
    if (!Number.isSafeInteger(allowed) || !Number.isSafeInteger(retry) || !Number.isSafeInteger(remaining))
      return malformed()
    const rule = rules[i]!
    results.push(
      allowed === 1
        ? { ruleId: rule.ruleId, mode: rule.mode, allowed: true, remaining }
        : { ruleId: rule.ruleId, mode: rule.mode, allowed: false, retryAfterSeconds: retry, remaining }
    )
  }
  const admitted = reply[2] === 1
  return Effect.succeed(
    until === undefined ? { now, admitted, results } : { now, coolDownUntil: until, admitted, results }
  )
}
