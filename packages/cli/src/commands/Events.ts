/**
 * `cli events tail` (spec 4.7): follows request events like `tail -f`. The list is newest first
 * and an event is stored after its request ends, so each poll re-reads a look-back window before
 * the newest event seen and prints, oldest first, only the events it has not printed yet.
 */
import { Console, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { type RequestEvent, type RequestEventFilterName, requestEventFilterProblem } from "@svc/domain/RequestEvent"
import { maxPageSize } from "@svc/domain/Resource"
import { apiFlags, connectApi, validateApiFlags } from "../ApiClient.ts"
import { ApiFailure, toApiFailure } from "../ApiFailure.ts"
import { outputFlag } from "../Output.ts"
import { followPages } from "../Paging.ts"
import { IntervalMs, intervalFlag } from "../PollInterval.ts"
import { progressLine } from "../Progress.ts"
import { root } from "../Root.ts"

/** Poll interval unless `--interval` is given. */
export const defaultTailIntervalMs = 2_000

/** How far before the newest event seen each poll looks for late-written events, unless `--lookback`. */
export const defaultLookbackMs = 30_000

/** Events printed before following, unless `--lines`. */
export const defaultTailLines = 10

/** What `events tail` has printed: the newest timestamp and the ids inside the look-back window. */
export interface TailState {
  readonly watermarkMs: number | undefined
  readonly seen: ReadonlyMap<string, number>
}

/** Nothing printed yet. */
export const emptyTail: TailState = { watermarkMs: undefined, seen: new Map() }

const timeOf = (event: RequestEvent): number => Date.parse(event.timestamp)

const oldestFirst = (a: RequestEvent, b: RequestEvent): number =>
  timeOf(a) - timeOf(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The events of `batch` not printed yet, oldest first, and the state after printing them: the
 * watermark moves to the newest event, ids older than the look-back window are forgotten.
 */
export const takeNew = (
  state: TailState,
  batch: ReadonlyArray<RequestEvent>,
  lookbackMs: number
): { readonly fresh: ReadonlyArray<RequestEvent>; readonly state: TailState } => {
  const seen = new Map(state.seen)
  const fresh: Array<RequestEvent> = []
  for (const event of batch) {
    if (seen.has(event.id)) continue
    seen.set(event.id, timeOf(event))
    fresh.push(event)
  }
  fresh.sort(oldestFirst)
  const newest = fresh.reduce(
    (max, event) => Math.max(max, timeOf(event)),
    state.watermarkMs ?? Number.NEGATIVE_INFINITY
  )
  const watermarkMs = Number.isFinite(newest) ? newest : undefined
  if (watermarkMs !== undefined) {
    for (const [id, at] of seen) if (at < watermarkMs - lookbackMs) seen.delete(id)
  }
  return { fresh, state: { watermarkMs, seen } }
}

/** `start` of the next poll: the look-back window before the watermark (nothing yet: no bound). */
export const pollStart = (state: TailState, lookbackMs: number): string | undefined =>
  state.watermarkMs === undefined ? undefined : new Date(state.watermarkMs - lookbackMs).toISOString()

/** One compact line of an event: time, method, status, source, duration, connection, host and path. */
export const eventLine = (event: RequestEvent): string =>
  [
    event.timestamp.replace("T", " ").replace(/Z$/, ""),
    event.method.padEnd(6),
    (event.response_status_code === null ? "---" : String(event.response_status_code)).padStart(3),
    event.response_source.padEnd(22),
    `${Math.round(event.duration_ms)}ms`.padStart(7),
    event.connection_id ?? "-",
    `${event.host}${event.path}`
  ]
    .join("  ")
    .replace(/[\r\n\t]/g, " ")

const filterFlag = (name: RequestEventFilterName, metavar: string, description: string) =>
  Flag.String(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(description), Flag.optional)

/** The filters of `events tail`, named as the list's query parameters. */
export const tailFilterFlags = {
  connectionId: filterFlag("connectionId", "ID", "Only events of this connection (cxn_…)"),
  connectorId: filterFlag("connectorId", "ID", "Only events of this connector (cxr_…)"),
  namespace: filterFlag("namespace", "PATH", "Only this namespace (root.acme) or a subtree (root.acme.**)"),
  method: filterFlag("method", "METHOD", "Only this HTTP method (GET)"),
  statusCode: filterFlag("statusCode", "CODE", "Only this response status (429)"),
  statusCodeRange: filterFlag("statusCodeRange", "LOW-HIGH", "Only response statuses in this range (500-599)"),
  path: filterFlag("path", "PATH", "Only this upstream path; a trailing * matches a prefix (/v1/*)"),
  response_source: filterFlag("response_source", "SOURCE", "Only upstream, connector_rate_limiter or rate_limit"),
  labelSelector: filterFlag("labelSelector", "SELECTOR", "Label selector over the event's frozen labels")
}

type TailFilters = { readonly [K in keyof typeof tailFilterFlags]: Option.Option<string> }

/** Usage errors of the filters (the server's own parsers) and of `--lines`; empty when valid. */
export const tailFlagErrors = (flags: TailFilters & { readonly lines: number }): ReadonlyArray<string> => {
  const errors: Array<string> = []
  for (const name of Object.keys(tailFilterFlags) as Array<keyof TailFilters>) {
    const value = flags[name]
    if (Option.isNone(value)) continue
    const problem = requestEventFilterProblem(name, value.value)
    if (problem !== undefined) errors.push(`--${name}: ${problem}`)
  }
  if (flags.lines < 0 || flags.lines > maxPageSize) errors.push(`--lines must be from 0 to ${maxPageSize}`)
  return errors
}

const tail = Command.make(
  "tail",
  {
    ...tailFilterFlags,
    lines: Flag.Int("lines").pipe(
      Flag.withAlias("n"),
      Flag.withMetavar("N"),
      Flag.withDescription(`Print the N newest events first, 0 for only new ones (default ${defaultTailLines})`),
      Flag.withDefault(defaultTailLines)
    ),
    interval: intervalFlag("Poll interval", defaultTailIntervalMs),
    lookback: Flag.String("lookback").pipe(
      Flag.withMetavar("DURATION"),
      Flag.withDescription(
        `How long after its request an event may still be written and be printed (default ${defaultLookbackMs / 1000}s)`
      ),
      Flag.withSchema(IntervalMs),
      Flag.withDefault(defaultLookbackMs)
    ),
    output: outputFlag(["jsonl", "table"], "table"),
    ...apiFlags
  },
  Effect.fn("EventsTail")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const filters: Record<string, string> = {}
    for (const name of Object.keys(tailFilterFlags) as Array<keyof TailFilters>) {
      const value = flags[name]
      if (Option.isSome(value)) filters[name] = value.value
    }
    const page = (query: Record<string, string | number>) =>
      client.requestEvents.list({ query }).pipe(Effect.mapError(toApiFailure(target.apiUrl, "list request events")))
    const window = Effect.fnUntraced(function* (start: string | undefined) {
      const events: Array<RequestEvent> = []
      yield* followPages({
        fetch: (cursor, limit) =>
          page(
            cursor === undefined ? { ...filters, ...(start === undefined ? {} : { start }), limit } : { cursor, limit }
          ),
        max: undefined,
        pageSize: maxPageSize,
        onPage: (items) => Effect.sync(() => events.push(...items))
      })
      return events
    })
    const print = (events: ReadonlyArray<RequestEvent>) =>
      Effect.forEach(
        events,
        (event) => Console.log(flags.output === "jsonl" ? JSON.stringify(event) : eventLine(event)),
        {
          discard: true
        }
      )

    // The newest `lines` events are printed; the rest of the look-back window counts as printed.
    const first = yield* page({ ...filters, limit: Math.max(1, flags.lines) })
    let state = emptyTail
    const newest = first.items[0]
    if (newest !== undefined) {
      const at = timeOf(newest)
      const history = (yield* window(new Date(at - flags.lookback).toISOString())).filter((e) => timeOf(e) <= at)
      state = takeNew(emptyTail, [...history, ...first.items], flags.lookback).state
      yield* print(first.items.slice(0, flags.lines).toReversed())
    }
    const progress = yield* progressLine
    while (true) {
      yield* Effect.sleep(flags.interval)
      const batch = yield* window(pollStart(state, flags.lookback)).pipe(
        Effect.catchIf(
          (error) => error instanceof ApiFailure && error.kind === "unreachable",
          (error) => Effect.as(progress.update(`${error.message}; retrying`), undefined)
        )
      )
      if (batch === undefined) continue
      yield* progress.finish()
      const next = takeNew(state, batch, flags.lookback)
      state = next.state
      yield* print(next.fresh)
    }
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags, tailFlagErrors(flags))),
  Command.withDescription("Follow request events like tail -f: the newest first, then new ones as they are stored"),
  Command.withExamples([
    { command: "cli events tail", description: "The 10 newest events, then every new one, until Ctrl-C" },
    {
      command: "cli events tail --connectionId cxn_123 --statusCodeRange 500-599 -o jsonl",
      description: "Failed calls of one connection as JSON lines"
    },
    {
      command: "cli events tail --namespace 'root.acme.**' --response_source rate_limit -n 0 --interval 5s",
      description: "Only new rate-limit rejections under root.acme, polling every 5 seconds"
    }
  ])
)

/** `cli events tail`. */
export const events = Command.make("events").pipe(
  Command.withDescription("Request events of proxied calls (spec 4.7)"),
  Command.withExamples([{ command: "cli events tail -o jsonl", description: "Follow every request event" }]),
  Command.withSubcommands([tail])
)
