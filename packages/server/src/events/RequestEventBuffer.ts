/**
 * The write path of request events (ARCHITECTURE "request path" step 7, SECURITY.md "Nothing
 * lost"): `record` is an array push; a background fiber writes batches to the app-metrics
 * database; during an outage events stay queued and are retried with capped backoff, and past
 * the in-memory bound (or a long outage) they go to an on-disk spool that is replayed once the
 * database is back, also on the next start. An event is dropped only when the spool cannot be
 * written either (or the database refuses it outright); drops are counted, logged and exported
 * as `svc.request_events.dropped`. Logs never carry event content. Every recorded event is also
 * appended at once to a journal file (one `write`, no `fsync`), removed once its events are
 * stored or spooled: a process that is killed (SIGKILL, OOM) loses none of the events it
 * recorded; the next process on the data directory replays them.
 */
import type { RequestEvent } from "@svc/domain/RequestEvent"
import { RequestEventRepo } from "@svc/sql/RequestEventRepo"
import { type Cause, Clock, Context, Duration, Effect, Exit, Fiber, Latch, Layer, type Scope, Semaphore } from "effect"
import { isSqlError } from "effect/sql/SqlError"
import * as path from "node:path"
import { SvcConfig } from "../config/SvcConfig.ts"
import { counter } from "../telemetry/Metrics.ts"
import { makeJournal } from "./RequestEventJournal.ts"
import { makeSpool, SpoolError } from "./RequestEventSpool.ts"

/** Events that reached neither the database nor the spool; asserted 0 in tests. */
export const droppedEvents = counter(
  "svc.request_events.dropped",
  "Request events lost: neither the app-metrics database nor the on-disk spool took them"
)

/** Events newly stored in the app-metrics database. */
export const writtenEvents = counter("svc.request_events.written", "Request events written to the app-metrics database")

/** How long the flush on close may take before the rest goes to the spool (shutdown is bounded). */
const closeFlushBound = Duration.millis(1500)

/** Tuning of the buffer; the defaults suit production, tests shorten the timings. */
export interface RequestEventSinkOptions {
  /** How often queued events are written when fewer than `batchSize` wait. Default 200 ms. */
  readonly flushInterval?: Duration.Input | undefined
  /** Events per INSERT; reaching it wakes the writer early. Default 500. */
  readonly batchSize?: number | undefined
  /** The in-memory bound: during an outage, this many queued events go to the spool. Default 10000. */
  readonly maxPending?: number | undefined
  /** During an outage lasting this long, queued events go to the spool even below the bound. Default 10 s. */
  readonly spillAfter?: Duration.Input | undefined
  /** First retry delay after a failed write; doubles per failure up to `retryMax`. Default 100 ms. */
  readonly retryBase?: Duration.Input | undefined
  readonly retryMax?: Duration.Input | undefined
}

/** Counters of the buffer since it started. */
export interface RequestEventSinkStats {
  /** Queued in memory, including a batch being written. */
  readonly pending: number
  readonly written: number
  readonly dropped: number
  /** Events written to the spool (replayed ones included). */
  readonly spooled: number
  readonly failedFlushes: number
}

/** Where request events go (the proxy records one per request). */
export class RequestEventSink extends Context.Service<
  RequestEventSink,
  {
    /** Queues one event; never blocks, never throws, never fails. */
    readonly record: (event: RequestEvent) => void
    /** Writes everything queued so far (used by tests and shutdown): to the database, else the spool. */
    readonly flush: Effect.Effect<void>
    readonly stats: () => RequestEventSinkStats
  }
>()("@svc/server/RequestEventSink") {
  /** The buffer spooling under `<dataDir>/spool/request-events/`; flushes and logs its totals on close. */
  static readonly layerNoDeps = (
    options: RequestEventSinkOptions = {}
  ): Layer.Layer<RequestEventSink, never, RequestEventRepo | SvcConfig> =>
    Layer.effect(
      RequestEventSink,
      Effect.flatMap(SvcConfig, (config) => make(path.join(config.dataDir, "spool", "request-events"), options))
    )

  /** The buffer spooling under `spoolDir`. */
  static readonly layerAt = (
    spoolDir: string,
    options: RequestEventSinkOptions = {}
  ): Layer.Layer<RequestEventSink, never, RequestEventRepo> => Layer.effect(RequestEventSink, make(spoolDir, options))
}

/** A short, content-free name of why a write failed (an SQL error's reason tag, a spool error code). */
const reasonOf = (cause: Cause.Cause<unknown>): string => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Die") return "defect"
    if (reason._tag !== "Fail") continue
    if (isSqlError(reason.error)) return reason.error.reason._tag
    if (reason.error instanceof SpoolError) return `${reason.error.operation}: ${reason.error.code}`
    return "failure"
  }
  return "interrupted"
}

const make = (
  spoolDir: string,
  options: RequestEventSinkOptions
): Effect.Effect<RequestEventSink["Service"], never, RequestEventRepo | Scope.Scope> =>
  Effect.gen(function* () {
    const repo = yield* RequestEventRepo
    const spool = makeSpool(spoolDir)
    const journal = makeJournal(spool, spoolDir)
    const batchSize = Math.max(1, options.batchSize ?? 500)
    const maxPending = Math.max(batchSize, options.maxPending ?? 10_000)
    const interval = Duration.fromInputUnsafe(options.flushInterval ?? "200 millis")
    const spillAfter = Duration.toMillis(options.spillAfter ?? "10 seconds")
    const retryBase = Duration.toMillis(options.retryBase ?? "100 millis")
    const retryMax = Duration.toMillis(options.retryMax ?? "30 seconds")
    const context = yield* Effect.context<never>()

    // Queued events as their JSON texts: the journal line, the spool line and the INSERT's JSON are
    // the same text, made once; a flat string also costs the GC less than the event's objects.
    let queue: Array<string> = []
    let inFlight = 0
    let written = 0
    let dropped = 0
    let spooled = 0
    let failedFlushes = 0
    let failures = 0
    let downSince = 0
    let retryAt = 0
    let lastReason = ""
    // Files of an earlier run may be waiting; the first pass looks.
    let spoolWaiting = true
    let closed = false
    const wake = Latch.makeUnsafe(false)
    const lock = Semaphore.makeUnsafe(1)

    const drop = (count: number) => {
      dropped += count
      droppedEvents.updateUnsafe(count, context)
    }

    const record = (event: RequestEvent): void => {
      if (closed) {
        // After shutdown nothing flushes the queue: keep the event on disk directly.
        if (spool.appendSync([event])) spooled++
        else drop(1)
        return
      }
      const line = JSON.stringify(event)
      queue.push(line)
      journal.append(line)
      if ((failures === 0 && queue.length >= batchSize) || queue.length >= maxPending) wake.openUnsafe()
    }

    const reachable = Effect.map(Effect.exit(repo.ping), Exit.isSuccess)

    const insert = (lines: ReadonlyArray<string>) =>
      Effect.tap(Effect.exit(repo.insertJson(lines)), (exit) =>
        Exit.isSuccess(exit)
          ? Effect.sync(() => {
              written += exit.value
              writtenEvents.updateUnsafe(exit.value, context)
            })
          : Effect.sync(() => {
              lastReason = reasonOf(exit.cause)
            })
      )

    /**
     * Writes `batch`; returns how many of its leading events are settled (stored, or refused by a
     * database that answers), so the rest can be queued again when the database is unreachable.
     */
    const store = (batch: ReadonlyArray<string>): Effect.Effect<number> =>
      Effect.gen(function* () {
        if (Exit.isSuccess(yield* insert(batch))) return batch.length
        if (!(yield* reachable)) return 0
        // The database answers but refused the batch: keep what it accepts, set aside the rest.
        const refused: Array<string> = []
        for (let i = 0; i < batch.length; i++) {
          const event = batch[i] as string
          if (Exit.isSuccess(yield* insert([event]))) continue
          if (!(yield* reachable)) {
            yield* setAside(refused)
            return i
          }
          refused.push(event)
        }
        yield* setAside(refused)
        return batch.length
      })

    const setAside = (refused: ReadonlyArray<string>) =>
      refused.length === 0
        ? Effect.void
        : Effect.gen(function* () {
            drop(refused.length)
            const kept = yield* Effect.exit(spool.reject(refused))
            yield* Effect.logError(
              `request events: the app-metrics database refused ${refused.length} event(s) (${lastReason}); ` +
                (Exit.isSuccess(kept) ? `kept in ${spoolDir}/rejected-*.jsonl, not replayed` : "they are lost")
            )
          })

    /**
     * Writes queued events batch by batch; false (the rest queued again) when the database is down.
     * Unless `all`, a partial batch is written only first: events that arrived while full batches
     * were being written wait for the next pass (at most one interval), so under load every
     * statement carries a full batch instead of a full one and a small remainder, alternately.
     */
    const drainQueue = (all: boolean) =>
      Effect.gen(function* () {
        let first = true
        while (queue.length > 0 && (all || first || queue.length >= batchSize)) {
          first = false
          const batch = queue.splice(0, batchSize)
          inFlight = batch.length
          const settled = yield* store(batch).pipe(
            Effect.onInterrupt(() => Effect.sync(() => queue.unshift(...batch))),
            Effect.ensuring(Effect.sync(() => (inFlight = 0)))
          )
          journal.settle(settled)
          if (settled < batch.length) {
            queue.unshift(...batch.slice(settled))
            return false
          }
        }
        return true
      })

    /** Replays spool files oldest first, removing each once stored; false when the database is down. */
    const replay = Effect.gen(function* () {
      if (!spoolWaiting) return true
      const files = yield* Effect.exit(spool.pending)
      if (Exit.isFailure(files)) {
        yield* Effect.logWarning(`request events: cannot list the spool ${spoolDir} (${reasonOf(files.cause)})`)
        spoolWaiting = false
        return true
      }
      for (const file of files.value) {
        const read = yield* Effect.exit(spool.read(file))
        if (Exit.isFailure(read)) {
          yield* Effect.logWarning(`request events: cannot read spool file ${file}; it is kept for the next start`)
          continue
        }
        const { events, unreadable } = read.value
        for (let from = 0; from < events.length; from += batchSize) {
          const chunk = events.slice(from, from + batchSize).map((event) => JSON.stringify(event))
          if ((yield* store(chunk)) < chunk.length) return false
        }
        if (unreadable > 0) {
          drop(unreadable)
          yield* Effect.logError(`request events: ${unreadable} unreadable line(s) in spool file ${file} were dropped`)
        }
        const removed = yield* Effect.exit(spool.remove(file))
        if (Exit.isFailure(removed)) {
          yield* Effect.logWarning(`request events: cannot remove replayed spool file ${file}; replays are idempotent`)
        }
        yield* Effect.logInfo(`request events: replayed ${events.length} spooled event(s) from ${file}`)
      }
      spoolWaiting = false
      return true
    })

    /** Moves every queued event to the spool; dropped (counted, logged) only if that write fails. */
    const spill = Effect.gen(function* () {
      if (queue.length === 0) return
      const events = queue
      queue = []
      const exit = yield* Effect.exit(spool.append(events))
      journal.settle(events.length)
      if (Exit.isSuccess(exit)) {
        spooled += events.length
        spoolWaiting = true
        yield* Effect.logWarning(
          `request events: ${events.length} event(s) spooled to ${spoolDir} while the app-metrics database is unavailable`
        )
        return
      }
      drop(events.length)
      yield* Effect.logError(
        `request events: ${events.length} event(s) dropped: the app-metrics database is unavailable and the spool ${spoolDir} cannot be written (${reasonOf(exit.cause)})`
      )
    }).pipe(Effect.uninterruptible)

    const failed = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (failures === 0) downSince = now
      failedFlushes++
      failures++
      const delay = Math.min(retryMax, retryBase * 2 ** Math.min(failures - 1, 30))
      retryAt = now + delay
      if (failures === 1 || failures % 10 === 0) {
        yield* Effect.logWarning(
          `request events: writing to the app-metrics database failed (${lastReason}, attempt ${failures}); ` +
            `${queue.length} queued, retrying in ${delay} ms`
        )
      }
    })

    const succeeded = Effect.gen(function* () {
      if (failures > 0) {
        yield* Effect.logInfo(`request events: app-metrics database writable again after ${failures} failed attempt(s)`)
      }
      failures = 0
    })

    const attempt = (all: boolean) =>
      Effect.gen(function* () {
        const ok = (yield* replay) && (yield* drainQueue(all))
        yield* ok ? succeeded : failed
        return ok
      })

    /**
     * One pass of the writer: write when due (at once, or at the retry time during an outage).
     * After a failed write, queued events go to the spool past the bound or a long outage, so a
     * long outage leaves at most one spool file per retry; past the bound they go at once.
     */
    const pass = lock.withPermits(1)(
      Effect.gen(function* () {
        yield* journal.rotate
        const now = yield* Clock.currentTimeMillis
        if ((failures === 0 || now >= retryAt) && (queue.length > 0 || spoolWaiting)) {
          const ok = yield* attempt(false)
          if (!ok && (queue.length >= maxPending || now - downSince >= spillAfter)) yield* spill
        } else if (queue.length >= maxPending) {
          yield* spill
        }
      })
    )

    const flush = lock.withPermits(1)(
      Effect.gen(function* () {
        yield* journal.rotate
        if (!(yield* attempt(true))) yield* spill
      })
    )

    /** The flush on close, bounded: what a slow or hung database has not taken by then is spooled. */
    const closingFlush = Effect.timeoutOrElse(flush, {
      duration: closeFlushBound,
      orElse: () => lock.withPermits(1)(spill)
    })

    const created = yield* Effect.exit(spool.ensure)
    if (Exit.isFailure(created)) {
      yield* Effect.logWarning(
        `request events: cannot create the spool ${spoolDir} (${reasonOf(created.cause)}); an outage can only be buffered in memory`
      )
    }
    // Journals of a process that was killed become spool files, replayed by the first pass.
    const adopted = yield* Effect.exit(spool.adoptJournals)
    if (Exit.isSuccess(adopted) && adopted.value > 0) {
      yield* Effect.logInfo(`request events: ${adopted.value} journal file(s) of a stopped process will be replayed`)
    }
    yield* journal.open

    const writer = yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          yield* Effect.raceFirst(Effect.sleep(interval), wake.await)
          wake.closeUnsafe()
          yield* pass
        })
      )
    )

    // Registered after the fork, so it runs first on close: stop the writer, then write the rest.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* Fiber.interrupt(writer)
        yield* closingFlush
        closed = true
        journal.stopOpening()
        if (queue.length > 0) yield* closingFlush
        journal.close()
        yield* Effect.logInfo(`request events: ${written} written, ${dropped} dropped, ${spooled} spooled`)
      })
    )

    return RequestEventSink.of({
      record,
      flush,
      stats: () => ({ pending: queue.length + inFlight, written, dropped, spooled, failedFlushes })
    })
  })
