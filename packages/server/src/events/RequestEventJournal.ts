/**
 * The journal of the request-event buffer (SECURITY.md "Nothing lost"): every recorded event is
 * appended at once to the open segment file (one `write`, no `fsync`); the writer starts a new
 * segment at each pass, and a closed segment is deleted once as many events as it held have left
 * the buffer's queue (stored or spooled, FIFO). A process that is killed loses none of the events
 * it recorded: the next process adopts its segments (`RequestEventSpool.adoptJournals`).
 */
import { Effect } from "effect"
import type { JournalSegment, makeSpool } from "./RequestEventSpool.ts"

const lostWhenKilled = "events not yet stored are lost if the process is killed"

/** The journal over `spool`; `spoolDir` only names the directory in warnings. */
export const makeJournal = (spool: ReturnType<typeof makeSpool>, spoolDir: string) => {
  let segment: JournalSegment | undefined
  let segmentEvents = 0
  // Closed segments with the count of events recorded when each closed.
  const sealed: Array<{ readonly name: string; readonly upTo: number }> = []
  let recorded = 0
  let settledTotal = 0
  let broken = false
  let warned = false
  let closed = false

  const seal = () => {
    if (segment === undefined) return
    spool.closeJournal(segment)
    sealed.push({ name: segment.name, upTo: recorded })
    segment = undefined
  }

  /** Settles `count` more events (gone from the queue) and deletes the segments they emptied. */
  const settle = (count: number) => {
    settledTotal += count
    for (let first = sealed[0]; first !== undefined && first.upTo <= settledTotal; first = sealed[0]) {
      spool.dropJournal(first.name)
      sealed.shift()
    }
  }

  return {
    /** Opens the first segment (at start); warns once when it cannot. */
    open: Effect.suspend(() => {
      segment = spool.openJournal()
      if (segment !== undefined) return Effect.void
      warned = true
      return Effect.logWarning(`request events: cannot open a journal in ${spoolDir}; ${lostWhenKilled}`)
    }),

    /**
     * Appends one recorded event (its JSON text) to the open segment; a failed write seals it and
     * is warned of at the next pass.
     */
    append: (line: string): void => {
      recorded++
      if (segment === undefined) return
      if (spool.journal(segment, line)) segmentEvents++
      else {
        seal()
        broken = true
      }
    },

    /** Starts a new segment (the writer does at each pass, so a segment holds about one pass). */
    rotate: Effect.suspend(() => {
      if (segment !== undefined && segmentEvents === 0) return Effect.void
      seal()
      segmentEvents = 0
      if (!closed) segment = spool.openJournal()
      if ((segment === undefined && !closed) || broken) {
        broken = false
        if (!warned) {
          warned = true
          return Effect.logWarning(`request events: the journal in ${spoolDir} cannot be written; ${lostWhenKilled}`)
        }
      }
      return Effect.void
    }),

    settle,

    /** Shutdown has begun: later events go straight to the spool, so no new segment opens. */
    stopOpening: (): void => {
      closed = true
    },

    /** Everything is stored or spooled: the last segment goes too. */
    close: (): void => {
      closed = true
      seal()
      settle(0)
    }
  }
}
