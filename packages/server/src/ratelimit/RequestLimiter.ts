/**
 * Rate-limit enforcement and the reactive limiter of one process (spec 2.8, 2.9, 4.6, 7;
 * ARCHITECTURE "The request path" steps 4–5), for every request that goes upstream through a
 * connection.
 *
 * `check` matches the request against the cached rules (`RuleCache`, in memory) and asks the
 * rate-limit store once — every matched rule and the connection's published cool-down in one
 * round trip (one Lua script on Redis). An enforce rule that rejects wins over a cool-down (spec
 * 4.6 rule 5); of several, the longest retry-after is reported (rule 2). A store failure lets the
 * request through (fail-open, rule 8) with a warning at most once a minute and a metric.
 *
 * `upstreamAnswered` sees each upstream answer. A 429 (unless `rate_limiting.disabled`) cools the
 * connection down in this process at once and is reported to the `Connection` entity without
 * waiting; the entity counts the streak, computes the spec 2.9 wait and publishes the end that
 * every process reads. The first answer other than 429 to a request sent after a known cool-down
 * ended tells the entity the streak is over. A request never waits on the entity.
 */
import { type CoolDownPolicy, coolDownMillis, coolDownPolicy } from "@svc/domain/CoolDown"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { CompiledRule, MatchedRule, RateLimitRequest } from "@svc/domain/RateLimitMatch"
import { retryAfterSeconds } from "@svc/domain/RateLimitAlgorithm"
import type { RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { type ResponseHeaders, retryAfterMillis } from "@svc/domain/RetryAfter"
import { Clock, Context, Duration, Effect, Layer, Metric, Option, Random, Scope } from "effect"
import { type RateLimitDecision, type RateLimitRuleResult, RateLimitStore } from "../stores/RateLimitStore.ts"
import { CoolDownReports } from "./CoolDownReports.ts"
import { RuleCache } from "./RuleCache.ts"
import { counter } from "../telemetry/Metrics.ts"

/** Why svc answers a request itself (spec 7); `ruleId` is null for a cool-down. */
export interface Rejection {
  readonly source: "rate_limit" | "connector_rate_limiter"
  readonly ruleId: string | null
  /** Whole seconds, at least 1 (API-CONVENTIONS). */
  readonly retryAfterSeconds: number
}

/** What a rejection says to a person (the 429 body's `error`, a failed probe's reason). */
export const rejectionMessage = (rejection: Rejection): string =>
  rejection.source === "rate_limit"
    ? `rate limit ${rejection.ruleId} exceeded; retry after ${rejection.retryAfterSeconds}s`
    : `the upstream asked svc to slow down (429); the connection cools down for ${rejection.retryAfterSeconds}s`

/** The verdict on one request and the request event's rate-limit fields (spec 2.12). */
export interface LimitOutcome {
  /** Undefined: the request goes upstream. */
  readonly rejection: Rejection | undefined
  /** Undefined when no rule matched. */
  readonly rateLimit: RequestEventRateLimit | undefined
}

/** An upstream answer as the reactive limiter sees it. */
export interface UpstreamAnswer {
  readonly connectionId: string
  /** The connector version's `rate_limiting` (spec 2.9). */
  readonly policy: CoolDownPolicy
  /** When the request was sent (epoch ms). */
  readonly startedAt: number
  readonly status: number
  readonly headers: ResponseHeaders
}

const policies = new WeakMap<ConnectorDefinition, CoolDownPolicy>()

/** A connector version's `rate_limiting` in milliseconds, computed once per (cached) definition. */
export const connectorCoolDownPolicy = (definition: ConnectorDefinition): CoolDownPolicy => {
  let policy = policies.get(definition)
  if (policy === undefined) {
    policy = coolDownPolicy(definition.rate_limiting)
    policies.set(definition, policy)
  }
  return policy
}

/** Rate-limit store failures: each one let a request through unchecked (fail-open). */
export const storeFailures = counter(
  "svc.rate_limit.store_failures.total",
  "Rate-limit checks that failed at the counter store and let the request through (fail-open)"
)

/** Rules skipped for one request because they threw while they were evaluated. */
export const ruleFailures = counter(
  "svc.rate_limit.rule_failures.total",
  "Rate-limit rules skipped for a request because they failed at evaluation"
)

/** Reports to the `Connection` entity that failed (the cool-down stays local to this process). */
export const reportFailures = counter(
  "svc.rate_limit.cool_down_report_failures.total",
  "Upstream 429 or success reports the Connection entity could not be told"
)

/** How long a detached report to the `Connection` entity waits for its answer. */
const reportTimeout = Duration.seconds(30)

/** A warning of one kind is logged at most this often. */
const warningInterval = 60_000

/** Local cool-downs and streak marks are swept every this many checks. */
const sweepEvery = 4096

/** A streak mark this old (no answer since its cool-down) is forgotten; the entity keeps the streak. */
const streakMemoryMs = 24 * 60 * 60_000

const longest = (results: ReadonlyArray<RateLimitRuleResult>, mode: "enforce" | "observe") => {
  let found: RateLimitRuleResult | undefined
  for (const result of results) {
    if (result.mode !== mode || result.allowed) continue
    if (found === undefined || (result.retryAfterSeconds ?? 0) > (found.retryAfterSeconds ?? 0)) found = result
  }
  return found
}

/**
 * The event's rate-limit fields: every match, and the rule that decided — the enforce rule that
 * rejected (longest retry-after), else an observe rule that would have rejected (observe mode's
 * dry run), else none.
 */
const eventFields = (
  matched: ReadonlyArray<MatchedRule>,
  decided: RateLimitRuleResult | undefined
): RequestEventRateLimit | undefined => {
  if (matched.length === 0) return undefined
  const firing = decided === undefined ? undefined : matched.find((m) => m.rule.id === decided.ruleId)
  return {
    rate_limit_id: firing?.rule.id ?? null,
    rate_limit_mode: firing?.rule.mode ?? null,
    rate_limit_bucket: firing?.bucket.values ?? null,
    rate_limit_matched: matched.map((m) => ({ id: m.rule.id, mode: m.rule.mode, bucket: m.bucket.values }))
  }
}

export class RequestLimiter extends Context.Service<
  RequestLimiter,
  {
    /**
     * The verdict on `request` before it goes upstream; never fails (fail-open). With `coolDown:
     * false` only the rules apply (an OAuth2 token call is not held back by the API's cool-down).
     */
    readonly check: (
      request: RateLimitRequest,
      options?: { readonly coolDown?: boolean | undefined }
    ) => Effect.Effect<LimitOutcome>
    /** Sees an upstream answer; returns at once (reports run detached). */
    readonly upstreamAnswered: (answer: UpstreamAnswer) => Effect.Effect<void>
    /**
     * Whether `upstreamAnswered` has anything to do with an answer other than 429 of the
     * connection (a cool-down streak is marked): false, such an answer may be left unseen.
     */
    readonly watching: (connectionId: string) => boolean
  }
>()("@svc/server/ratelimit/RequestLimiter") {
  static readonly layerNoDeps: Layer.Layer<RequestLimiter, never, RuleCache | RateLimitStore | CoolDownReports> =
    Layer.effect(
      RequestLimiter,
      Effect.gen(function* () {
        const rules = yield* RuleCache
        const store = yield* RateLimitStore
        const reports = yield* CoolDownReports
        const scope = yield* Scope.Scope

        /** Cool-down ends this process knows of before the store does (its own 429s), epoch ms. */
        const localEnds = new Map<string, number>()
        /** Connections with a 429 streak the entity may hold, and the latest cool-down end seen. */
        const streaks = new Map<string, number>()
        let checks = 0

        const lastWarned = new Map<string, number>()
        const warnThrottled = (kind: string, message: string, cause?: unknown) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const last = lastWarned.get(kind)
            if (last !== undefined && now - last < warningInterval) return Effect.void
            lastWarned.set(kind, now)
            return cause === undefined ? Effect.logWarning(message) : Effect.logWarning(message, cause)
          })

        const sweep = (now: number) => {
          if (++checks < sweepEvery) return
          checks = 0
          for (const [id, end] of localEnds) if (end <= now) localEnds.delete(id)
          for (const [id, end] of streaks) if (now - end > streakMemoryMs) streaks.delete(id)
        }

        const localEnd = (connectionId: string, now: number): number | undefined => {
          const end = localEnds.get(connectionId)
          if (end === undefined) return undefined
          if (end > now) return end
          localEnds.delete(connectionId)
          return undefined
        }

        const markStreak = (connectionId: string, end: number) => {
          const known = streaks.get(connectionId)
          if (known === undefined || end > known) streaks.set(connectionId, end)
        }

        const coolDown = (leftMs: number, rateLimit: RequestEventRateLimit | undefined): LimitOutcome => ({
          rejection: { source: "connector_rate_limiter", ruleId: null, retryAfterSeconds: retryAfterSeconds(leftMs) },
          rateLimit
        })

        const verdict = (
          request: RateLimitRequest,
          matched: ReadonlyArray<MatchedRule>,
          decision: RateLimitDecision,
          now: number,
          local: number | undefined
        ): LimitOutcome => {
          const enforce = longest(decision.results, "enforce")
          if (enforce !== undefined) {
            return {
              rejection: {
                source: "rate_limit",
                ruleId: enforce.ruleId,
                retryAfterSeconds: enforce.retryAfterSeconds ?? 1
              },
              rateLimit: eventFields(matched, enforce)
            }
          }
          const rateLimit = eventFields(matched, longest(decision.results, "observe"))
          // Each end against its own clock: the store's (Redis TIME) and this process's.
          const published = decision.coolDownUntil === undefined ? 0 : decision.coolDownUntil - decision.now
          if (decision.coolDownUntil !== undefined) markStreak(request.connectionId, now + published)
          const left = Math.max(published, local === undefined ? 0 : local - now)
          return left > 0 ? coolDown(left, rateLimit) : { rejection: undefined, rateLimit }
        }

        let failedRule: CompiledRule | undefined
        const noteFailure = (rule: CompiledRule) => {
          failedRule = rule
        }

        const check = (
          request: RateLimitRequest,
          options?: { readonly coolDown?: boolean | undefined }
        ): Effect.Effect<LimitOutcome> =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            sweep(now)
            // `matching` runs synchronously: the one listener notes a rule that failed (no closure per check).
            failedRule = undefined
            const matched = rules.matching(request, noteFailure)
            const failed = failedRule as CompiledRule | undefined
            failedRule = undefined
            const coolDowns = options?.coolDown !== false
            const local = coolDowns ? localEnd(request.connectionId, now) : undefined
            const report =
              failed === undefined
                ? undefined
                : Effect.andThen(
                    Metric.update(ruleFailures, 1),
                    warnThrottled(`rule:${failed.id}`, `rate-limit rule ${failed.id} failed at evaluation; skipped`)
                  )
            // A cool-down this process saw needs no round trip when no rule has to be counted.
            if (matched.length === 0 && local !== undefined) {
              const outcome = coolDown(local - now, undefined)
              return report === undefined ? Effect.succeed(outcome) : Effect.as(report, outcome)
            }
            const checked = store
              .check({
                connectionId: request.connectionId,
                coolDown: coolDowns,
                rules: matched.map((m) => ({
                  ruleId: m.rule.id,
                  mode: m.rule.mode,
                  bucketKey: m.bucket.key,
                  algorithm: m.rule.definition.algorithm
                }))
              })
              .pipe(
                Effect.map((decision) => verdict(request, matched, decision, now, local)),
                Effect.catch((error) =>
                  Effect.andThen(
                    Effect.andThen(
                      Metric.update(storeFailures, 1),
                      warnThrottled(
                        "store",
                        "the rate-limit store failed; requests go through unchecked until it answers (fail-open)",
                        error
                      )
                    ),
                    Effect.succeed(
                      local === undefined
                        ? { rejection: undefined, rateLimit: eventFields(matched, undefined) }
                        : coolDown(local - now, eventFields(matched, undefined))
                    )
                  )
                )
              )
            return report === undefined ? checked : Effect.andThen(report, checked)
          })

        // A report waits at most `reportTimeout` for the entity's answer (with every worker down a
        // persisted report stays queued in the database and is handled when one is back).
        const detached = (effect: Effect.Effect<void, unknown>, what: string) =>
          Effect.asVoid(
            Effect.forkIn(
              effect.pipe(
                Effect.timeout(reportTimeout),
                Effect.catch((error) =>
                  Effect.andThen(
                    Metric.update(reportFailures, 1),
                    warnThrottled("report", `the Connection entity could not be told of ${what}`, error)
                  )
                )
              ),
              scope
            )
          )

        const upstream429 = (answer: UpstreamAnswer, now: number) =>
          Effect.gen(function* () {
            const id = answer.connectionId
            const wait = retryAfterMillis(answer.headers, answer.policy, now)
            const local = localEnd(id, now)
            // 429s to requests already in flight when a cool-down started (this process's or the
            // published one) do not lengthen the streak.
            const known = Math.max(local ?? 0, streaks.get(id) ?? 0)
            if (known > now && (wait === undefined || now + wait <= known + 1_000)) return
            const current = local
            const provisional = now + (coolDownMillis(answer.policy, 1, wait, yield* Random.next) ?? 0)
            if (provisional > now) localEnds.set(id, Math.max(provisional, current ?? 0))
            markStreak(id, provisional)
            yield* detached(
              Effect.map(
                reports.upstream429(id, { observedAt: now, retryAfterMs: wait, policy: answer.policy }),
                Option.match({
                  onNone: () => undefined,
                  onSome: (end) => {
                    // The entity's end (the streak's backoff) replaces the provisional one.
                    if (end > now) localEnds.set(id, Math.max(end, localEnds.get(id) ?? 0))
                    markStreak(id, end)
                  }
                })
              ),
              `an upstream 429 of connection ${id}`
            )
          })

        const upstreamAnswered = (answer: UpstreamAnswer): Effect.Effect<void> =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            if (answer.status === 429) return answer.policy.disabled ? Effect.void : upstream429(answer, now)
            const end = streaks.get(answer.connectionId)
            // Only an answer to a request sent after the cool-down ended says the upstream recovered.
            if (end === undefined || answer.startedAt < end) return Effect.void
            streaks.delete(answer.connectionId)
            return detached(reports.success(answer.connectionId), `connection ${answer.connectionId} recovering`)
          })

        return RequestLimiter.of({ check, upstreamAnswered, watching: (connectionId) => streaks.has(connectionId) })
      })
    )
}
