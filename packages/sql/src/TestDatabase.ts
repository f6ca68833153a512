/**
 * Fresh, isolated databases for tests of every package: a uniquely named PostgreSQL database on
 * 127.0.0.1:5432 (dropped on release) or a PGlite instance on a temp dir (removed on release).
 */
import { PGlite } from "@electric-sql/pglite"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as PgClient from "./PgClient.ts"
import * as PgliteClient from "./PgliteClient.ts"
import * as PgliteTemplate from "./PgliteTemplate.ts"

/** Where the test database lives; `url` is set for PostgreSQL, `dataDir` for PGlite. */
export class TestDatabase extends Context.Service<
  TestDatabase,
  {
    readonly backend: "postgres" | "pglite"
    readonly url: string | undefined
    readonly dataDir: string | undefined
  }
>()("@svc/sql/TestDatabase") {}

/** URL of `database` on the test server (127.0.0.1:5432, trust auth, user `postgres`). */
export const serverUrl = (database: string): string => `postgres://postgres@127.0.0.1:5432/${database}`

const uniqueName = (prefix: string) =>
  `${prefix}_${Date.now().toString(36)}_${Array.from(globalThis.crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("")}`

/** Runs `f` on a short-lived client connected to the `postgres` maintenance database. */
const withAdmin = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(PgClient.layer({ url: serverUrl("postgres"), poolSize: 1 })), (context) =>
      f(Context.get(context, SqlClient.SqlClient))
    )
  )

const dropDatabase = (name: string) =>
  withAdmin((sql) =>
    Effect.andThen(
      sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`,
      sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`
    )
  )

/** A fresh PostgreSQL database per build, reached through `PgClient.layer`; dropped on release. */
export const postgres: Layer.Layer<SqlClient.SqlClient | TestDatabase, SqlError> = Layer.unwrap(
  Effect.gen(function* () {
    const name = uniqueName("svc_test")
    yield* Effect.acquireRelease(
      withAdmin((sql) => sql`CREATE DATABASE ${sql(name)}`),
      () => Effect.orDie(dropDatabase(name))
    )
    const url = serverUrl(name)
    return Layer.merge(
      PgClient.layer({ url, poolSize: 5 }),
      Layer.succeed(TestDatabase, { backend: "postgres", url, dataDir: undefined })
    )
  })
)

const tempDirError = (cause: unknown) =>
  new SqlError({
    reason: new ConnectionError({ cause, message: "Cannot prepare a PGlite data dir", operation: "connect" })
  })

// initdb takes seconds; copying an initialised, cleanly closed data dir takes a fraction of that.
// The template is shared by every test process on the machine and keyed by the pinned PGlite version.
const templateDir = Path.join(Os.tmpdir(), "svc-pglite-template-0.5.16")
const templateMarker = Path.join(templateDir, ".svc-template-ready")

const ensureTemplate = async (): Promise<void> => {
  if (
    await Fs.stat(templateMarker).then(
      () => true,
      () => false
    )
  )
    return
  const build = await Fs.mkdtemp(Path.join(Os.tmpdir(), "svc-pglite-template-build-"))
  const db = await PGlite.create(build)
  await db.close()
  await Fs.writeFile(Path.join(build, ".svc-template-ready"), "")
  // Another process may have won the race; its template is as good as ours.
  await Fs.rename(build, templateDir).catch(() => Fs.rm(build, { recursive: true, force: true }))
}

let template: Promise<void> | undefined

const makeTempDir = Effect.acquireRelease(
  Effect.tryPromise({
    try: async () => {
      template ??= ensureTemplate()
      await template
      const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "svc-pglite-"))
      await Fs.cp(templateDir, dir, { recursive: true })
      return dir
    },
    catch: tempDirError
  }),
  (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
)

/** A fresh PGlite database on a temp dir per build; the dir is removed after PGlite closes. */
export const pglite: Layer.Layer<SqlClient.SqlClient | PgliteClient.PgliteClient | TestDatabase, SqlError> =
  Layer.unwrap(
    Effect.map(makeTempDir, (dir) =>
      Layer.merge(
        PgliteClient.layer({ dataDir: dir }),
        Layer.succeed(TestDatabase, { backend: "pglite", url: undefined, dataDir: dir })
      )
    )
  )

// The same for in-memory databases: every `memory://` build loads a dump of an initialised data
// directory instead of running its own initdb.
/**
 * The dump of a fresh `initdb`: the same template the embedded default's first start unpacks
 * (`PgliteTemplate`, written by the build), made here when a test runs before any build.
 */
const ensureTemplateDump = async (): Promise<Blob> => {
  await PgliteTemplate.writeTemplate()
  return new Blob([await Fs.readFile(PgliteTemplate.templateFile())])
}

let dump: Promise<Blob> | undefined

const templateBlob = Effect.tryPromise({
  try: () => {
    dump ??= ensureTemplateDump()
    dump.catch(() => {
      dump = undefined
    })
    return dump
  },
  catch: tempDirError
})

/** A fresh in-memory PGlite database per build (`memory://`, started from the template's dump). */
export const pgliteMemory: Layer.Layer<SqlClient.SqlClient | PgliteClient.PgliteClient | TestDatabase, SqlError> =
  Layer.unwrap(
    Effect.map(templateBlob, (loadDataDir) =>
      Layer.merge(
        PgliteClient.layer({ dataDir: "memory://", loadDataDir }),
        Layer.succeed(TestDatabase, { backend: "pglite", url: undefined, dataDir: "memory://" })
      )
    )
  )

/** Both backends, for conformance suites: `for (const [name, layer] of TestDatabase.backends) …`. */
export const backends: ReadonlyArray<
  readonly [name: "postgres" | "pglite", layer: Layer.Layer<SqlClient.SqlClient | TestDatabase, SqlError>]
> = [
  ["postgres", postgres],
  ["pglite", pglite]
]
