/**
 * The rate-limit rules of this process (spec 4.6 rule 6; ARCHITECTURE "The request path" step 4):
 * every live rule compiled once and held in memory, reloaded every `rate_limits.refresh_interval`.
 * `matching` answers from memory alone: no SQL, nothing asynchronous. A failed reload keeps the
 * last good snapshot and logs a warning; a rule that cannot run (a regex RE2 rejects, a definition
 * that no longer decodes) is logged once and left out (spec 4.6 rule 8). `reload` lets the process
 * that writes a rule apply it at once; other processes see it at their next reload.
 */
import type { AccessFilter } from "@svc/domain/AccessFilter"
import {
  type CompiledRule,
  compileStoredRule,
  emptyIndex,
  indexRules,
  type MatchedRule,
  matchingRules,
  type RateLimitRequest,
  type RuleIndex
} from "@svc/domain/RateLimitMatch"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { RateLimitRow } from "@svc/sql/Rows"
import { Cause, Clock, Context, Duration, Effect, Layer, Result, Semaphore } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"

/** A live rule left out of the snapshot, and why. */
export interface SkippedRule {
  readonly id: string
  readonly reason: string
}

/** The rules of the last good load. */
export interface RuleSnapshot {
  readonly rules: ReadonlyArray<CompiledRule>
  readonly skipped: ReadonlyArray<SkippedRule>
  readonly index: RuleIndex
  /** Good loads so far; 0 before the first, when the cache is empty. */
  readonly generation: number
  /** When the last good load finished (epoch ms); undefined before the first. */
  readonly loadedAt: number | undefined
}

const emptySnapshot: RuleSnapshot = { rules: [], skipped: [], index: emptyIndex, generation: 0, loadedAt: undefined }

/** Rows read per query while loading. */
const pageSize = 500

/** Until a first load succeeds, it is retried this often (or at the refresh interval, if shorter). */
const firstLoadRetry = Duration.seconds(5)

const everyRow: AccessFilter = { grants: [{ namespace: { _tag: "Any" }, ids: undefined }], restrictions: undefined }

/** Every live rule, in pages ordered by id. */
const loadRows = (repo: ResourceRepo["Service"]) =>
  Effect.gen(function* () {
    const rows: Array<RateLimitRow> = []
    let after: { readonly value: string; readonly id: string } | undefined
    for (;;) {
      const page = yield* repo.list(
        {
          table: "rate_limits",
          access: everyRow,
          namespace: undefined,
          name: undefined,
          selector: undefined,
          equals: {},
          sort: { column: "id", type: "text" },
          direction: "ASC",
          after,
          limit: pageSize
        },
        RateLimitRow
      )
      rows.push(...page.rows)
      const last = page.rows.at(-1)
      if (!page.more || last === undefined) return rows
      after = { value: last.id, id: last.id }
    }
  })

/** The rate-limit rules of this process, compiled, matched in memory. */
export class RuleCache extends Context.Service<
  RuleCache,
  {
    /**
     * The rules matching `request`, each with its bucket (spec 4.6 rule 1: they all apply); a rule
     * that throws while it is evaluated is left out and handed to `onError`.
     */
    readonly matching: (
      request: RateLimitRequest,
      onError?: (rule: CompiledRule, error: unknown) => void
    ) => ReadonlyArray<MatchedRule>
    /** The snapshot `matching` reads. */
    readonly snapshot: () => RuleSnapshot
    /** Loads every live rule now; false (and a warning) when that failed and the snapshot was kept. */
    readonly reload: Effect.Effect<boolean>
  }
>()("@svc/server/RuleCache") {
  /** Reloads every `rate_limits.refresh_interval`. */
  static readonly layerNoDeps: Layer.Layer<RuleCache, never, ResourceRepo | SvcConfig> = Layer.unwrap(
    Effect.map(SvcConfig, (config) =>
      RuleCache.layerWith({ refreshInterval: Duration.millis(config.rateLimits.refreshIntervalMs) })
    )
  )

  /** Reloads every `refreshInterval`; the first load runs while the layer is built. */
  static readonly layerWith = (options: {
    readonly refreshInterval: Duration.Input
  }): Layer.Layer<RuleCache, never, ResourceRepo> =>
    Layer.effect(
      RuleCache,
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const interval = Duration.fromInputUnsafe(options.refreshInterval)
        const lock = Semaphore.makeUnsafe(1)
        let current = emptySnapshot

        const install = Effect.fnUntraced(function* (rows: ReadonlyArray<RateLimitRow>) {
          const rules: Array<CompiledRule> = []
          const skipped: Array<SkippedRule> = []
          for (const row of rows) {
            const compiled = compileStoredRule(row)
            if (Result.isSuccess(compiled)) rules.push(compiled.success)
            else skipped.push({ id: row.id, reason: compiled.failure })
          }
          const previous = current
          current = {
            rules,
            skipped,
            index: indexRules(rules),
            generation: previous.generation + 1,
            loadedAt: yield* Clock.currentTimeMillis
          }
          // spec 4.6 rule 8: an invalid rule is logged and skipped (logged again only when it changes)
          for (const rule of skipped) {
            if (!previous.skipped.some((p) => p.id === rule.id && p.reason === rule.reason)) {
              yield* Effect.logWarning(`rate-limit rule ${rule.id} is skipped: ${rule.reason}`)
            }
          }
        })

        // Loads run one at a time, so a slow older load never replaces a newer snapshot.
        const reload: Effect.Effect<boolean> = lock
          .withPermits(1)(Effect.flatMap(loadRows(repo), install))
          .pipe(
            Effect.as(true),
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.interrupt
                : Effect.as(
                    Effect.logWarning("rate-limit rules could not be reloaded; keeping the last good snapshot", cause),
                    false
                  )
            ),
            Effect.withSpan("RuleCache.reload")
          )

        yield* reload
        yield* Effect.forkScoped(
          Effect.forever(
            Effect.suspend(() =>
              Effect.sleep(current.generation === 0 ? Duration.min(interval, firstLoadRetry) : interval)
            ).pipe(Effect.andThen(reload))
          )
        )

        return RuleCache.of({
          matching: (request, onError) => matchingRules(current.index, request, onError),
          snapshot: () => current,
          reload
        })
      })
    )
}
