import { sampleRequestEvent } from "@svc/sql/TestRows"
import { assert, layer } from "@effect/vitest"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import * as Migrations from "@svc/sql/Migrations"
import { RequestEventRepo } from "@svc/sql/RequestEventRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Context, Effect, Exit, Layer, Logger, Metric, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { droppedEvents, RequestEventSink, type RequestEventSinkOptions } from "./RequestEventBuffer.ts"

/** What the test repository does: fail like an unreachable database while `down`, and log batch sizes. */
interface Control {
  down: boolean
  readonly batches: Array<number>
}

const unreachable = new SqlError({
  reason: new ConnectionError({ cause: new Error("ECONNREFUSED"), message: "connect failed", operation: "connect" })
})

/** The real PGlite repository behind a switch that takes the database down. */
const switchable = (control: Control) =>
  Layer.effect(
    RequestEventRepo,
    Effect.map(RequestEventRepo.make, (real) =>
      RequestEventRepo.of({
        ...real,
        insertJson: (lines) =>
          Effect.suspend(() => {
            control.batches.push(lines.length)
            return control.down ? Effect.fail(unreachable) : real.insertJson(lines)
          }),
        ping: Effect.suspend(() => (control.down ? Effect.fail(unreachable) : real.ping))
      })
    )
  )

const event = (id: string, extra: Partial<RequestEvent> = {}): RequestEvent =>
  sampleRequestEvent({
    id,
    namespace: "root.buffer",
    path: "/v1/things",
    duration_ms: 3,
    labels: { env: "test" },
    ...extra
  })

const events = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => event(`${prefix}_${String(i).padStart(4, "0")}`))

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-spool-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const spoolFiles = (dir: string, prefix = "spool-") =>
  Effect.promise(() =>
    fs.readdir(dir).then(
      (names) => names.filter((name) => name.startsWith(prefix)),
      () => []
    )
  )

const stored = (prefix: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM request_events WHERE id LIKE ${`${prefix}\\_%`}`,
      (rows) => rows[0]?.n ?? -1
    )
  )

/** Polls `check` every 5 ms until it holds; dies after 10 s. */
const eventually = (what: string, check: () => boolean) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 10_000
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("5 millis")
    }
  })

/** Runs `body` with a sink over the switchable repository; the sink closes (flushes) when `body` ends. */
const withSink = <A, E, R>(
  control: Control,
  spoolDir: string,
  options: RequestEventSinkOptions,
  body: (sink: RequestEventSink["Service"]) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, Scope.Scope> | SqlClient.SqlClient> =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(
        RequestEventSink.layerAt(spoolDir, options).pipe(Layer.provide(switchable(control)))
      )
      return yield* body(Context.get(context, RequestEventSink))
    })
  )

/** Collects the log lines of `effect`. */
const captureLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const capture = Logger.layer([Logger.map(Logger.formatJson, (line) => lines.push(line))])
    const result = yield* Effect.provide(effect, capture)
    return { result, log: lines.join("\n") }
  })

const droppedCount = Effect.map(Metric.value(droppedEvents), (state) => state.count)

const fast: RequestEventSinkOptions = { flushInterval: "10 millis", retryBase: "5 millis", retryMax: "20 millis" }

const Db = Layer.provideMerge(Migrations.layerAppMetrics, TestDatabase.pgliteMemory)

layer(Db, { timeout: "60 seconds", excludeTestServices: true })("RequestEventSink", (it) => {
  it.effect("record only queues; the writer stores the queue in batches of at most batchSize", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: false, batches: [] }
        const stats = yield* withSink(control, dir, { ...fast, batchSize: 10 }, (sink) =>
          Effect.gen(function* () {
            for (const e of events("req_batch", 35)) sink.record(e)
            assert.deepStrictEqual(sink.stats().pending, 35)
            assert.deepStrictEqual(control.batches, [])
            yield* eventually("35 written", () => sink.stats().written === 35)
            return sink.stats()
          })
        )
        assert.deepStrictEqual(stats, { pending: 0, written: 35, dropped: 0, spooled: 0, failedFlushes: 0 })
        assert.isTrue(control.batches.length >= 4 && control.batches.every((size) => size > 0 && size <= 10))
        assert.strictEqual(yield* stored("req_batch"), 35)
      })
    )
  )

  it.effect("a pass writes full batches; a remainder waits for the next pass, and closing writes it", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: false, batches: [] }
        const during = yield* withSink(control, dir, { ...fast, flushInterval: "1 hour", batchSize: 10 }, (sink) =>
          Effect.gen(function* () {
            // 25 queued wake the writer (10 or more): two full batches, the 5 left wait.
            for (const e of events("req_full", 25)) sink.record(e)
            yield* eventually("20 written", () => sink.stats().written === 20)
            yield* Effect.sleep("50 millis")
            const afterFirstPass = sink.stats()
            // 5 more make a full batch again, written at once.
            for (const e of events("req_more", 5)) sink.record(e)
            yield* eventually("30 written", () => sink.stats().written === 30)
            // 3 more stay below a batch: the closing flush writes them.
            for (const e of events("req_tail", 3)) sink.record(e)
            return { afterFirstPass, batches: [...control.batches] }
          })
        )
        assert.strictEqual(during.afterFirstPass.written, 20)
        assert.strictEqual(during.afterFirstPass.pending, 5)
        assert.deepStrictEqual(during.batches, [10, 10, 10])
        assert.deepStrictEqual(control.batches, [10, 10, 10, 3])
        assert.strictEqual((yield* stored("req_full")) + (yield* stored("req_more")) + (yield* stored("req_tail")), 33)
      })
    )
  )

  it.effect("a database outage keeps the events queued and retries until they are written", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: true, batches: [] }
        const { result, log } = yield* captureLogs(
          withSink(control, dir, { ...fast, spillAfter: "1 hour" }, (sink) =>
            Effect.gen(function* () {
              for (const e of events("req_retry", 20)) sink.record(e)
              yield* eventually("three failed writes", () => sink.stats().failedFlushes >= 3)
              const during = sink.stats()
              control.down = false
              yield* eventually("20 written", () => sink.stats().written === 20)
              return { during, after: sink.stats() }
            })
          )
        )
        assert.deepStrictEqual([result.during.pending, result.during.written, result.during.spooled], [20, 0, 0])
        assert.deepStrictEqual([result.after.pending, result.after.dropped, result.after.spooled], [0, 0, 0])
        assert.strictEqual(yield* stored("req_retry"), 20)
        assert.include(log, "writing to the app-metrics database failed (ConnectionError")
        assert.include(log, "app-metrics database writable again")
        assert.include(log, "request events: 20 written, 0 dropped, 0 spooled")
        assert.notInclude(log, "req_retry")
        assert.notInclude(log, "api.example.com")
      })
    )
  )

  it.effect("past the in-memory bound the queue goes to the spool, which is replayed and removed", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: true, batches: [] }
        const result = yield* withSink(
          control,
          dir,
          { ...fast, batchSize: 5, maxPending: 10, spillAfter: "1 hour" },
          (sink) =>
            Effect.gen(function* () {
              for (const e of events("req_spill", 25)) sink.record(e)
              yield* eventually("25 spooled", () => sink.stats().spooled === 25)
              const during = { stats: sink.stats(), files: yield* spoolFiles(dir) }
              const lines = yield* Effect.promise(() =>
                Promise.all(during.files.map((file) => fs.readFile(path.join(dir, file), "utf8")))
              )
              control.down = false
              yield* eventually("25 written", () => sink.stats().written === 25)
              return { during, lines: lines.join("").trim().split("\n").length, after: sink.stats() }
            })
        )
        assert.deepStrictEqual([result.during.stats.pending, result.during.stats.written], [0, 0])
        assert.isTrue(result.during.files.length >= 1)
        assert.strictEqual(result.lines, 25)
        assert.deepStrictEqual([result.after.pending, result.after.dropped], [0, 0])
        assert.deepStrictEqual(yield* spoolFiles(dir), [])
        assert.strictEqual(yield* stored("req_spill"), 25)
      })
    )
  )

  it.effect("a long outage spools the queue below the bound, one file per failed retry at most", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: true, batches: [] }
        const result = yield* withSink(control, dir, { ...fast, spillAfter: "30 millis" }, (sink) =>
          Effect.gen(function* () {
            for (const e of events("req_long", 5)) sink.record(e)
            yield* eventually("5 spooled", () => sink.stats().spooled === 5)
            const during = sink.stats()
            control.down = false
            yield* eventually("5 written", () => sink.stats().written === 5)
            return { during, after: sink.stats() }
          })
        )
        assert.deepStrictEqual([result.during.pending, result.during.written], [0, 0])
        assert.deepStrictEqual([result.after.pending, result.after.dropped], [0, 0])
        assert.strictEqual(yield* stored("req_long"), 5)
        assert.deepStrictEqual(yield* spoolFiles(dir), [])
      })
    )
  )

  it.effect("closing the scope writes what is queued and logs the totals", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: false, batches: [] }
        const { result, log } = yield* captureLogs(
          withSink(control, dir, { flushInterval: "1 hour", batchSize: 1000 }, (sink) =>
            Effect.sync(() => {
              for (const e of events("req_close", 7)) sink.record(e)
              return sink.stats()
            })
          )
        )
        assert.strictEqual(result.pending, 7)
        assert.strictEqual(yield* stored("req_close"), 7)
        assert.include(log, "request events: 7 written, 0 dropped, 0 spooled")
      })
    )
  )

  it.effect("closing during an outage spools the queue; the next start replays it", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: true, batches: [] }
        const first = yield* captureLogs(
          withSink(control, dir, { flushInterval: "1 hour" }, (sink) =>
            Effect.sync(() => {
              for (const e of events("req_restart", 6)) sink.record(e)
              return sink
            })
          )
        )
        assert.include(first.log, "request events: 0 written, 0 dropped, 6 spooled")
        // An event recorded after close goes straight to the spool.
        first.result.record(event("req_restart_late"))
        assert.deepStrictEqual([first.result.stats().spooled, first.result.stats().dropped], [7, 0])
        assert.isTrue((yield* spoolFiles(dir)).length >= 2)
        assert.strictEqual(yield* stored("req_restart"), 0)

        control.down = false
        const second = yield* withSink(control, dir, fast, (sink) =>
          Effect.gen(function* () {
            yield* eventually("7 replayed", () => sink.stats().written === 7)
            return sink.stats()
          })
        )
        assert.deepStrictEqual(second, { pending: 0, written: 7, dropped: 0, spooled: 0, failedFlushes: 0 })
        assert.strictEqual(yield* stored("req_restart"), 7)
        assert.deepStrictEqual(yield* spoolFiles(dir), [])
      })
    )
  )

  it.effect("every recorded event is journalled at once; a killed process's journal is replayed by the next", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: false, batches: [] }
        // The first sink never writes (its pass is an hour away) and is never closed: a kill.
        const killed = yield* Scope.make()
        const first = Context.get(
          yield* Layer.buildWithScope(
            RequestEventSink.layerAt(dir, { flushInterval: "1 hour" }).pipe(Layer.provide(switchable(control))),
            killed
          ),
          RequestEventSink
        )
        for (const e of events("req_killed", 9)) first.record(e)
        const journals = yield* spoolFiles(dir, "journal-")
        assert.strictEqual(journals.length, 1)
        const lines = yield* Effect.promise(() => fs.readFile(path.join(dir, journals[0] as string), "utf8"))
        assert.strictEqual(lines.trim().split("\n").length, 9)
        assert.strictEqual(yield* stored("req_killed"), 0)

        // The next process (the same pid here, another instance) adopts the journal and stores it.
        const second = yield* captureLogs(
          withSink(control, dir, fast, (sink) =>
            Effect.gen(function* () {
              yield* eventually("9 replayed", () => sink.stats().written === 9)
              return sink.stats()
            })
          )
        )
        assert.include(second.log, "1 journal file(s) of a stopped process will be replayed")
        assert.deepStrictEqual(second.result, { pending: 0, written: 9, dropped: 0, spooled: 0, failedFlushes: 0 })
        assert.strictEqual(yield* stored("req_killed"), 9)
        // A clean close leaves no journal and no spool behind.
        assert.deepStrictEqual(yield* spoolFiles(dir, "journal-"), [])
        assert.deepStrictEqual(yield* spoolFiles(dir), [])
        yield* Scope.close(killed, Exit.void)
      })
    )
  )

  it.effect("a stored segment of the journal is removed; the journal of a live process is left alone", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: false, batches: [] }
        yield* withSink(control, dir, fast, (sink) =>
          Effect.gen(function* () {
            for (const e of events("req_segment", 20)) sink.record(e)
            yield* eventually("20 written", () => sink.stats().written === 20)
            yield* sink.flush
            // Only the open segment is left, and it is empty.
            const journals = yield* spoolFiles(dir, "journal-")
            assert.strictEqual(journals.length, 1)
            const text = yield* Effect.promise(() => fs.readFile(path.join(dir, journals[0] as string), "utf8"))
            assert.strictEqual(text, "")
            // The journal of another running process (pid 1 is always running) is not adopted.
            yield* Effect.promise(() =>
              fs.writeFile(path.join(dir, "journal-000000000000001-1-0000abcd-000001.jsonl"), "", { mode: 0o600 })
            )
          })
        )
        const second = yield* withSink(control, dir, fast, () => Effect.void)
        assert.isUndefined(second)
        assert.deepStrictEqual(yield* spoolFiles(dir, "journal-"), ["journal-000000000000001-1-0000abcd-000001.jsonl"])
        assert.strictEqual(yield* stored("req_segment"), 20)
      })
    )
  )

  it.effect("an event the database refuses is set aside and counted; the rest of its batch is stored", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const control: Control = { down: false, batches: [] }
        const before = yield* droppedCount
        const { result, log } = yield* captureLogs(
          withSink(control, dir, fast, (sink) =>
            Effect.gen(function* () {
              const good = events("req_poison", 3)
              sink.record(good[0] as RequestEvent)
              sink.record(event("req_poison_bad", { timestamp: "not a time" }))
              for (const e of good.slice(1)) sink.record(e)
              yield* eventually("the batch settled", () => sink.stats().written === 3 && sink.stats().pending === 0)
              return sink.stats()
            })
          )
        )
        assert.deepStrictEqual([result.written, result.dropped, result.pending], [3, 1, 0])
        assert.strictEqual((yield* droppedCount) - before, 1)
        assert.strictEqual(yield* stored("req_poison"), 3)
        assert.strictEqual((yield* spoolFiles(dir, "rejected-")).length, 1)
        assert.include(log, "refused 1 event(s)")
        assert.include(log, "request events: 3 written, 1 dropped, 0 spooled")
      })
    )
  )

  it.effect("when neither the database nor the spool takes events they are dropped, counted and logged", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const blocked = path.join(dir, "not-a-directory")
        yield* Effect.promise(() => fs.writeFile(blocked, "x"))
        const control: Control = { down: true, batches: [] }
        const before = yield* droppedCount
        const { result, log } = yield* captureLogs(
          withSink(control, blocked, { flushInterval: "1 hour" }, (sink) =>
            Effect.gen(function* () {
              for (const e of events("req_lost", 4)) sink.record(e)
              yield* sink.flush
              return sink.stats()
            })
          )
        )
        assert.deepStrictEqual([result.pending, result.spooled, result.dropped], [0, 0, 4])
        assert.strictEqual((yield* droppedCount) - before, 4)
        assert.include(log, "4 event(s) dropped")
        assert.include(log, "request events: 0 written, 4 dropped, 0 spooled")
        assert.notInclude(log, "req_lost")
      })
    )
  )
})
