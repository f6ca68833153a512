/**
 * `SqlClient` over PGlite (PostgreSQL in WASM), in process or in a worker thread of its own (the
 * embedded default's database, `layerWorker`). PGlite has one session, so every statement,
 * transaction and `reserve` takes one permit.
 */
import { PGlite, type Results } from "@electric-sql/pglite"
import { makeCompiler } from "@effect/sql-pg/PgClient"
import * as PgTypes from "@effect/sql-pg/PgTypes"
import { Context, Effect, Layer, Semaphore, Stream } from "effect"
import type { Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection, Statement } from "effect/sql"
import {
  ConnectionError,
  ConstraintError,
  DeadlockError,
  SerializationError,
  SqlError,
  type SqlErrorReason,
  SqlSyntaxError,
  UniqueViolation,
  UnknownError
} from "effect/sql/SqlError"
import * as NameTransforms from "./NameTransforms.ts"
import { pgliteParsers as parsers } from "./PgliteParsers.ts"
import { startParams, useBaselineWasmCompiler } from "./PgliteSettings.ts"
import { post, takeOrOpenThread } from "./PgliteOpen.ts"
import { extractTemplate, templateFor } from "./PgliteTemplate.ts"

/** Options of the PGlite client; transforms default to {@link NameTransforms}. */
export interface PgliteClientConfig {
  /** A directory on disk (created if missing) or `memory://`. */
  readonly dataDir: string
  /**
   * A dump (`PGlite.dumpDataDir`) of an initialised data directory to start from instead of
   * running `initdb` (in process only; the tests' in-memory databases, `TestDatabase.pgliteMemory`).
   */
  readonly loadDataDir?: Blob | undefined
  readonly transformQueryNames?: ((name: string) => string) | undefined
  readonly transformResultNames?: ((name: string) => string) | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  /**
   * A data-directory dump a first open (no database in `dataDir` yet) unpacks instead of running
   * `initdb` (`PgliteTemplate.ts`); default: the build's template when it exists; `false`: none.
   */
  readonly template?: string | false | undefined
}

/** The template a first open of `config.dataDir` unpacks, if any. */
const templateOf = (config: PgliteClientConfig): string | undefined =>
  config.template === false
    ? undefined
    : config.template === undefined
      ? templateFor(config.dataDir)
      : templateFor(config.dataDir, config.template)

/** A `SqlClient` (driver `"pglite"`, dialect `pg`) that also exposes the PGlite instance. */
export interface PgliteClient extends SqlClient.SqlClient {
  readonly config: PgliteClientConfig
  readonly pglite: PGlite
}

/** Service tag of the PGlite client; the layers also provide it as `SqlClient`. */
export const PgliteClient = Context.Service<PgliteClient>("@svc/sql/PgliteClient")

const OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int4: 23,
  text: 25,
  json: 114,
  float8: 701,
  timestamp: 1114,
  date: 1082,
  timestamptz: 1184,
  jsonb: 3802
} as const
const ARRAY_OID: Record<number, number> = { 16: 1000, 17: 1001, 20: 1016, 23: 1007, 25: 1009, 701: 1022, 1184: 1185 }

// Parameters are serialised here (see `encodeParams`), so PGlite must pass them through untouched.
const passThrough = new Proxy({}, { get: () => (value: unknown) => value })

class ParamError extends Error {}

const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

const toHex = (bytes: Uint8Array) => `\\x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`

/** Infers the type of a parameter exactly like @effect/sql-pg (strings bind untyped). */
const inferScalar = (value: unknown): readonly [oid: number, text: string | null] => {
  if (PgTypes.isParameter(value)) {
    if (value.value === null || value.value === undefined) return [value.oid, null]
    if (value.oid === OID.json || value.oid === OID.jsonb) return [value.oid, JSON.stringify(value.value)]
    return [value.oid, inferScalar(value.value)[1]]
  }
  if (value === null || value === undefined) return [0, null]
  switch (typeof value) {
    case "boolean":
      return [OID.bool, value ? "t" : "f"]
    case "bigint":
      return [OID.int8, value.toString()]
    case "number":
      if (Number.isInteger(value)) {
        if (value >= INT32_MIN && value <= INT32_MAX) return [OID.int4, String(value)]
        if (Number.isSafeInteger(value)) return [OID.int8, String(value)]
      }
      return [OID.float8, String(value)]
    case "string":
      return [0, value]
  }
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new ParamError("Cannot encode an invalid Date")
    return [OID.timestamptz, value.toISOString()]
  }
  if (value instanceof Uint8Array) return [OID.bytea, toHex(value)]
  throw new ParamError(`Cannot infer a PostgreSQL type for ${String(value)}`)
}

const quoteElement = (text: string) => `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`

const inferParam = (value: unknown): readonly [oid: number, text: string | null] => {
  if (!Array.isArray(value)) return inferScalar(value)
  if (value.length === 0) return [0, "{}"]
  let elementOid: number | undefined
  const parts = value.map((element) => {
    if (Array.isArray(element)) throw new ParamError("Nested array parameters are not supported")
    const [oid, text] = inferScalar(element)
    if (text === null) return "NULL"
    const typed = oid === 0 ? OID.text : oid
    if (elementOid !== undefined && elementOid !== typed) throw new ParamError("Array elements must share one type")
    elementOid = typed
    return quoteElement(text)
  })
  const arrayOid = elementOid === undefined ? 0 : ARRAY_OID[elementOid]
  if (arrayOid === undefined) throw new ParamError(`Unsupported array element type ${elementOid}`)
  return [arrayOid, `{${parts.join(",")}}`]
}

const encodeParams = (params: ReadonlyArray<unknown>) => {
  const paramTypes: Array<number> = []
  const values: Array<string | null> = []
  for (const param of params) {
    const [oid, text] = inferParam(param)
    paramTypes.push(oid)
    values.push(text)
  }
  return { paramTypes, values }
}

const classify = (cause: unknown, operation: string): SqlErrorReason => {
  const message = cause instanceof Error ? cause.message : "PGlite query failed"
  const props = { cause, message, operation }
  const code =
    typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
      ? cause.code
      : undefined
  if (cause instanceof ParamError || code === undefined) return new UnknownError(props)
  if (code === "23505") {
    const constraint = "constraint" in (cause as object) ? String((cause as { constraint: unknown }).constraint) : ""
    return new UniqueViolation({ ...props, constraint: constraint.length > 0 ? constraint : "unknown" })
  }
  if (code.startsWith("23")) return new ConstraintError(props)
  if (code.startsWith("42")) return new SqlSyntaxError(props)
  if (code.startsWith("08")) return new ConnectionError(props)
  if (code === "40P01") return new DeadlockError(props)
  if (code === "40001") return new SerializationError(props)
  return new UnknownError(props)
}

const sqlError = (cause: unknown, operation: string) => new SqlError({ reason: classify(cause, operation) })

/** What a connection needs of PGlite: one statement with serialised parameters. */
interface Queryable {
  readonly query: (
    sql: string,
    values: Array<string | null>,
    options: { readonly rowMode: "object" | "array"; readonly paramTypes: Array<number> }
  ) => Promise<{ readonly rows: Array<object> }>
}

const inProcess = (db: PGlite): Queryable => ({
  query: (sql, values, options) => db.query<object>(sql, values, { ...options, serializers: passThrough })
})

const makeConnection = (db: Queryable): SqlConnection.Connection => {
  const run = (sql: string, params: ReadonlyArray<unknown>, rowMode: "object" | "array", operation: string) =>
    Effect.tryPromise({
      try: () => {
        const { paramTypes, values } = encodeParams(params)
        return db.query(sql, values, { rowMode, paramTypes })
      },
      catch: (cause) => sqlError(cause, operation)
    })
  const rows = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows?: <A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>
  ) =>
    Effect.map(run(sql, params, "object", "execute"), (result) =>
      transformRows ? transformRows(result.rows) : result.rows
    )
  const values = (sql: string, params: ReadonlyArray<unknown>) =>
    Effect.map(
      run(sql, params, "array", "executeValues"),
      (result) => result.rows as ReadonlyArray<ReadonlyArray<unknown>>
    )
  return {
    execute: rows,
    executeUnprepared: rows,
    executeRaw: (sql, params) => run(sql, params, "object", "executeRaw"),
    executeValues: values,
    executeValuesUnprepared: values,
    // PGlite cannot stream: the rows are collected, then emitted.
    executeStream: (sql, params, transformRows) =>
      Stream.unwrap(Effect.map(rows(sql, params, transformRows), (all) => Stream.fromIterable(all)))
  }
}

/** PostgreSQL reports `ROLLBACK` for a `COMMIT` of an aborted transaction. */
const commit = (conn: SqlConnection.Connection): Effect.Effect<void, SqlError> =>
  Effect.flatMap(conn.executeRaw("COMMIT", []), (result) =>
    (result as Results).command === "ROLLBACK"
      ? Effect.fail(sqlError(new Error("COMMIT rolled back an aborted transaction"), "commit"))
      : Effect.void
  )

/** Opens PGlite in the scope (closed, and its data dir flushed, when the scope closes). */
export const make = Effect.fnUntraced(function* (
  config: PgliteClientConfig
): Effect.fn.Return<PgliteClient, SqlError, Scope.Scope | Reactivity.Reactivity> {
  yield* Effect.sync(() => useBaselineWasmCompiler())
  const db = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const template = config.loadDataDir === undefined ? templateOf(config) : undefined
        if (template !== undefined) await extractTemplate(template, config.dataDir)
        return await PGlite.create(config.dataDir, {
          parsers,
          startParams: startParams(),
          ...(config.loadDataDir === undefined ? {} : { loadDataDir: config.loadDataDir })
        })
      },
      catch: (cause) =>
        new SqlError({
          reason: new ConnectionError({
            cause,
            message: `Cannot open PGlite at ${config.dataDir}`,
            operation: "connect"
          })
        })
    }),
    (db) => (db.closed ? Effect.void : Effect.promise(() => db.close()))
  )
  const client = yield* clientOver(inProcess(db), config)
  return Object.assign(client, { config, pglite: db })
})

/** A `SqlClient` over `db`: one permit for every statement, transaction and `reserve`. */
const clientOver = (db: Queryable, config: PgliteClientConfig) => {
  const connection = makeConnection(db)
  const semaphore = Semaphore.makeUnsafe(1)
  // A transaction or `reserve` holds the only permit until its scope closes; statements of the
  // transaction run on its connection without the semaphore, so they never wait on themselves.
  const lease = Effect.uninterruptibleMask((restore) => Effect.as(restore(semaphore.takeScoped(1)), connection))
  const transformQueryNames = config.transformQueryNames ?? NameTransforms.queryNames
  const transformResultNames = config.transformResultNames ?? NameTransforms.resultNames
  return SqlClient.make({
    driver: "pglite",
    acquirer: lease,
    borrower: (f) => semaphore.withPermit(f(connection)),
    transactionAcquirer: lease,
    compiler: makeCompiler(transformQueryNames, false),
    transformRows: Statement.defaultTransforms(transformResultNames, false).array,
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    spanAttributes: [
      ...(config.spanAttributes ? Object.entries(config.spanAttributes) : []),
      ["db.system.name", "postgresql"],
      ["db.namespace", "pglite"]
    ]
  })
}

const openError = (config: PgliteClientConfig, cause: unknown) =>
  new SqlError({
    reason: new ConnectionError({ cause, message: `Cannot open PGlite at ${config.dataDir}`, operation: "connect" })
  })

/**
 * A `SqlClient` over PGlite running in a worker thread of its own (`PgliteThread.ts`), so the
 * database's work (WebAssembly, its file system) never blocks this thread's event loop: the
 * server's embedded default, whose request-event inserts would otherwise stall every request
 * while a batch is written. Statements are serialised exactly as in process; rows cross the
 * thread boundary by structured clone (BigInt and Date survive). The worker closes, its data dir
 * flushed, when the scope closes.
 */
export const makeWorker = Effect.fnUntraced(function* (
  config: PgliteClientConfig
): Effect.fn.Return<SqlClient.SqlClient, SqlError, Scope.Scope | Reactivity.Reactivity> {
  // V8's flags are the process's: set here, before the thread compiles PGlite's module.
  yield* Effect.sync(() => useBaselineWasmCompiler())
  const worker = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => takeOrOpenThread({ dataDir: config.dataDir, template: templateOf(config) }),
      catch: (cause) => openError(config, cause)
    }),
    (thread) =>
      Effect.promise(() =>
        post(thread, { kind: "close" }).then(
          () => thread.terminate(),
          () => thread.terminate()
        )
      )
  )
  return yield* clientOver(
    {
      query: (sql, values, options) =>
        post(worker, { kind: "query", sql, values, rowMode: options.rowMode, paramTypes: options.paramTypes }).then(
          (result) => result as { rows: Array<object> }
        )
    },
    config
  )
})

/** Layer providing `SqlClient` over PGlite in a worker thread ({@link makeWorker}). */
export const layerWorker = (config: PgliteClientConfig): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.effect(SqlClient.SqlClient, makeWorker(config)).pipe(Layer.provide(Reactivity.layer))

/** Layer providing `PgliteClient` and `SqlClient` from plain options. */
export const layer = (config: PgliteClientConfig): Layer.Layer<PgliteClient | SqlClient.SqlClient, SqlError> =>
  Layer.effectContext(
    Effect.map(make(config), (client) =>
      Context.make(PgliteClient, client).pipe(Context.add(SqlClient.SqlClient, client))
    )
  ).pipe(Layer.provide(Reactivity.layer))
