/**
 * Counts the SQL statements one PGlite instance runs, for tests of the hot path (issue 6: zero
 * queries per warm proxied request). The instance's `query`, `exec` and `transaction` methods are
 * wrapped for the life of the scope (the `SqlClient` looks `query` up on every call) and every
 * statement's text is kept, so an unexpected statement can be named in the failure.
 */
import type { PGlite, QueryOptions, Results, Transaction } from "@electric-sql/pglite"
import { Effect, type Scope } from "effect"

/** Statements seen since the last reset. */
export interface QueryCounter {
  /** Statement texts in the order they ran (`transaction(...)` counts as one `<transaction>`). */
  readonly statements: () => ReadonlyArray<string>
  /** Forgets what was seen so far. */
  readonly reset: () => void
}

/** Wraps `db`'s statement methods until the scope closes, then puts the originals back. */
export const countStatements = (db: PGlite): Effect.Effect<QueryCounter, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => {
        let seen: Array<string> = []
        const query = db.query
        const exec = db.exec
        const transaction = db.transaction
        db.query = <T>(text: string, params?: Array<unknown>, options?: QueryOptions) => {
          seen.push(text)
          return query.call(db, text, params, options) as Promise<Results<T>>
        }
        db.exec = (text: string, options?: QueryOptions) => {
          seen.push(text)
          return exec.call(db, text, options)
        }
        db.transaction = <T>(callback: (tx: Transaction) => Promise<T>) => {
          seen.push("<transaction>")
          return transaction.call(db, callback) as Promise<T>
        }
        const counter: QueryCounter = {
          statements: () => [...seen],
          reset: () => {
            seen = []
          }
        }
        const restore = () => {
          db.query = query
          db.exec = exec
          db.transaction = transaction
        }
        return { counter, restore }
      }),
      ({ restore }) => Effect.sync(restore)
    ),
    ({ counter }) => counter
  )
