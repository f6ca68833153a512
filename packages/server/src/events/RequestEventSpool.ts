/**
 * The on-disk spool of the request-event buffer (SECURITY.md "Nothing lost"): append-only JSON
 * lines files, owner-only, written when the app-metrics database cannot take events and
 * replayed (then removed) once it can. Events the database refuses outright go to
 * `rejected-*.jsonl` files, which are kept for inspection and never replayed. The journal
 * (`journal-*.jsonl`) holds every event as it is recorded, so a killed process loses none: a
 * later process turns the journals of a process that is gone into spool files.
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

/** The text of a spool file holding `lines` (each the JSON text of one event). */
const joinLines = (lines: ReadonlyArray<string>): string => (lines.length === 0 ? "" : `${lines.join("\n")}\n`)

const isMissing = (error: SpoolError) => error.code === "ENOENT"

/** An open journal segment: its file name and descriptor. */
export interface JournalSegment {
  readonly name: string
  readonly fd: number
}

/** The pid of a journal file name (`journal-<ms>-<pid>-<instance>-<seq>.jsonl`), if it is one. */
const journalPid = (name: string): number | undefined => {
  const match = /^journal-\d+-(\d+)-[0-9a-f]+-\d+\.jsonl$/.exec(name)
  return match === null ? undefined : Number(match[1])
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return codeOf(error) === "EPERM"
  }
}

/** The spool of one directory. File names sort oldest first. */
export const makeSpool = (dir: string) => {
  let sequence = 0
  // The journal's encoding buffer, reused for every event (grown for a larger one).
  let scratch = Buffer.allocUnsafe(16 * 1024)
  /** Tells this process's journals from those of an earlier process with the same pid. */
  const instance = Math.floor(Math.random() * 0xffffffff)
    .toString(16)
    .padStart(8, "0")
  const stamp = () => `${String(Date.now()).padStart(15, "0")}-${process.pid}`
  const fileName = (kind: "spool" | "rejected") => `${kind}-${stamp()}-${String(++sequence).padStart(6, "0")}.jsonl`

  const write = async (file: string, lines: ReadonlyArray<string>) => {
    const handle = await fsp.open(path.join(dir, file), "a", 0o600)
    try {
      await handle.writeFile(joinLines(lines))
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
    /** Writes events (their JSON texts) to a new spool file and syncs it to disk. */
    append: (lines: ReadonlyArray<string>) => attempt("append", () => write(fileName("spool"), lines)),
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
    /** Keeps events (their JSON texts) the database refused; these files are never replayed. */
    reject: (lines: ReadonlyArray<string>) => attempt("append", () => write(fileName("rejected"), lines)),
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
    remove: (file: string) =>
      attempt("remove", () => fsp.rm(path.join(dir, file), { force: true })).pipe(Effect.asVoid),
    /** Opens a new journal segment (blocking, owner-only); undefined when it cannot be created. */
    openJournal: (): JournalSegment | undefined => {
      const name = `journal-${stamp()}-${instance}-${String(++sequence).padStart(6, "0")}.jsonl`
      try {
        return { name, fd: fs.openSync(path.join(dir, name), "a", 0o600) }
      } catch {
        return undefined
      }
    },
    /**
     * Appends one event (its JSON text) to a segment: one `write`, no `fsync` — it survives the process being
     * killed, not the machine losing power. False when the write failed.
     */
    journal: (segment: JournalSegment, line: string): boolean => {
      try {
        // Encoded into one reused buffer (a string write would allocate one per event).
        let length = scratch.write(line, 0, "utf8")
        if (length > scratch.length - 4) {
          // Possibly cut short (a UTF-8 sequence that does not fit is left out whole): grow and redo.
          scratch = Buffer.allocUnsafe(Math.max(2 * scratch.length, Buffer.byteLength(line) + 1))
          length = scratch.write(line, 0, "utf8")
        }
        scratch[length++] = 0x0a
        for (let done = 0; done < length; ) done += fs.writeSync(segment.fd, scratch, done, length - done)
        return true
      } catch {
        return false
      }
    },
    /** Closes a segment's descriptor. */
    closeJournal: (segment: JournalSegment): void => {
      try {
        fs.closeSync(segment.fd)
      } catch {
        // Already closed.
      }
    },
    /** Removes a closed segment whose events are all stored or spooled. */
    dropJournal: (name: string): void => {
      try {
        fs.rmSync(path.join(dir, name), { force: true })
      } catch {
        // Replaying it again later is harmless: inserts skip stored ids.
      }
    },
    /**
     * Turns the journals of processes that are gone (not running, or an earlier process that had
     * this pid) into spool files, replayed like any other; answers how many.
     */
    adoptJournals: attempt("list", () => fsp.readdir(dir)).pipe(
      Effect.catchIf(isMissing, () => Effect.succeed<Array<string>>([])),
      Effect.flatMap((names) =>
        Effect.tryPromise({
          try: async () => {
            let adopted = 0
            for (const name of names) {
              const pid = journalPid(name)
              if (pid === undefined || name.includes(`-${instance}-`)) continue
              if (pid !== process.pid && alive(pid)) continue
              const target = `spool-${name.slice("journal-".length)}`
              try {
                await fsp.rename(path.join(dir, name), path.join(dir, target))
                adopted++
              } catch {
                // Another process adopted it first.
              }
            }
            return adopted
          },
          catch: (cause) => new SpoolError({ operation: "list", code: codeOf(cause) })
        })
      )
    )
  }
}

/** The spool of one directory. */
export type Spool = ReturnType<typeof makeSpool>
