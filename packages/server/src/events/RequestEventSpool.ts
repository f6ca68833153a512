/**
 * The on-disk spool of the request-event buffer (SECURITY.md "Nothing lost"): append-only JSON
 * lines files, owner-only, written when the app-metrics database cannot take events and
 * replayed (then removed) once it can. Events the database refuses outright go to
 * `rejected-*.jsonl` files, which are kept for inspection and never replayed.
 */
import { RequestEvent } from "@svc/domain/RequestEvent"
import { Data, Effect, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"

/** A spool file operation failed; `code` is the system error code when there is one. */
export class SpoolError extends Data.TaggedError("SpoolError")<{
  readonly operation: "create" | "list" | "append" | "read" | "remove"
  readonly code: string
}> {}

/** What a spool file held: its events and how many lines could not be read back (a torn write). */
export interface SpoolContents {
  readonly events: ReadonlyArray<RequestEvent>
  readonly unreadable: number
}

const codeOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : "unknown"

const attempt = <A>(operation: SpoolError["operation"], run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (cause) => new SpoolError({ operation, code: codeOf(cause) }) })

const decodeLine = Schema.decodeUnknownOption(Schema.fromJsonString(RequestEvent))

const toLines = (events: ReadonlyArray<RequestEvent>): string => events.map((e) => `${JSON.stringify(e)}\n`).join("")

const isMissing = (error: SpoolError) => error.code === "ENOENT"

/** The spool of one directory. File names sort oldest first. */
export const makeSpool = (dir: string) => {
  let sequence = 0
  const fileName = (kind: "spool" | "rejected") =>
    `${kind}-${String(Date.now()).padStart(15, "0")}-${process.pid}-${String(++sequence).padStart(6, "0")}.jsonl`

  const write = async (file: string, events: ReadonlyArray<RequestEvent>) => {
    const handle = await fsp.open(path.join(dir, file), "a", 0o600)
    try {
      await handle.writeFile(toLines(events))
      await handle.sync()
    } finally {
      await handle.close()
    }
  }

  return {
    dir,
    /** Creates the directory, owner-only. */
    ensure: attempt("create", () => fsp.mkdir(dir, { recursive: true, mode: 0o700 })).pipe(Effect.asVoid),
    /** Files waiting for replay, oldest first; none when the directory does not exist. */
    pending: attempt("list", () => fsp.readdir(dir)).pipe(
      Effect.catchIf(isMissing, () => Effect.succeed<Array<string>>([])),
      Effect.map((names) => names.filter((name) => name.startsWith("spool-") && name.endsWith(".jsonl")).sort())
    ),
    /** Writes `events` to a new spool file and syncs it to disk. */
    append: (events: ReadonlyArray<RequestEvent>) => attempt("append", () => write(fileName("spool"), events)),
    /** The same, blocking: for the rare event recorded after shutdown, outside any fiber. */
    appendSync: (events: ReadonlyArray<RequestEvent>): boolean => {
      try {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        const fd = fs.openSync(path.join(dir, fileName("spool")), "a", 0o600)
        try {
          fs.writeSync(fd, toLines(events))
          fs.fsyncSync(fd)
        } finally {
          fs.closeSync(fd)
        }
        return true
      } catch {
        return false
      }
    },
    /** Keeps events the database refused; these files are never replayed. */
    reject: (events: ReadonlyArray<RequestEvent>) => attempt("append", () => write(fileName("rejected"), events)),
    /** The events of a spool file; a file removed meanwhile (another process replayed it) is empty. */
    read: (file: string): Effect.Effect<SpoolContents, SpoolError> =>
      attempt("read", () => fsp.readFile(path.join(dir, file), "utf8")).pipe(
        Effect.catchIf(isMissing, () => Effect.succeed("")),
        Effect.map((text) => {
          const events: Array<RequestEvent> = []
          let unreadable = 0
          for (const line of text.split("\n")) {
            if (line.trim() === "") continue
            const decoded = decodeLine(line)
            if (Option.isSome(decoded)) events.push(decoded.value)
            else unreadable++
          }
          return { events, unreadable }
        })
      ),
    remove: (file: string) => attempt("remove", () => fsp.rm(path.join(dir, file), { force: true })).pipe(Effect.asVoid)
  }
}

/** The spool of one directory. */
export type Spool = ReturnType<typeof makeSpool>
