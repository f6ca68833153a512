/**
 * The prepared `initdb` (`PgliteTemplate.ts`): the build made it (Vitest's global setup runs the
 * build), a first open of a directory unpacks it into a database like `initdb`'s, in the worker
 * thread as in process, and a directory that holds a database, or `memory://`, never uses it.
 */
import { assert, describe, it } from "@effect/vitest"
import { PGlite } from "@electric-sql/pglite"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import * as PgliteClient from "./PgliteClient.ts"
import { extractTemplate, templateFile, templateFor, writeTemplate } from "./PgliteTemplate.ts"

const withDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "pglite-template-"))),
    f,
    (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
  )

// What initdb leaves: the three databases, the superuser, a usable public schema.
const cluster = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const databases = yield* sql<{ datname: string }>`SELECT datname FROM pg_database ORDER BY datname`
  const [user] = yield* sql<{
    rolname: string
    rolsuper: boolean
  }>`SELECT rolname, rolsuper FROM pg_roles WHERE rolname = current_user`
  yield* sql`CREATE TABLE t (id int PRIMARY KEY)`
  yield* sql`INSERT INTO t VALUES (1)`
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM t`
  const marker = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM from_template`
  return { databases: databases.map((d) => d.datname), user, marker, n: row?.n }
})

describe("PgliteTemplate", () => {
  it("the build made the template of the installed PGlite", () => {
    assert.isTrue(fs.existsSync(templateFile()), templateFile())
    assert.match(Path.basename(templateFile()), /^initdb-\d+\.\d+\.\d+.*\.tar\.gz$/)
  })

  it.effect("is used only by a directory on disk that holds no database yet", () =>
    withDir((dir) =>
      Effect.promise(async () => {
        const file = templateFile()
        assert.strictEqual(templateFor(dir, file), file)
        assert.strictEqual(templateFor(Path.join(dir, "not-yet-created"), file), file)
        assert.isUndefined(templateFor("memory://", file))
        assert.isUndefined(templateFor(dir, Path.join(dir, "missing.tar.gz")))
        await Fs.writeFile(Path.join(dir, "PG_VERSION"), "17\n")
        assert.isUndefined(templateFor(dir, file))
        // an existing template is not made again
        assert.isFalse(await writeTemplate(file))
      })
    )
  )

  it.effect("unpacks into the same files as tar(1), PG_VERSION included", () =>
    withDir((dir) =>
      Effect.promise(async () => {
        const ours = Path.join(dir, "ours")
        const theirs = Path.join(dir, "theirs")
        await Fs.mkdir(theirs)
        await extractTemplate(templateFile(), ours)
        execFileSync("tar", ["-xzf", templateFile(), "-C", theirs], { stdio: "ignore" })
        const list = async (root: string) =>
          (await Fs.readdir(root, { recursive: true, withFileTypes: true }))
            .map((e) => `${Path.relative(root, Path.join(e.parentPath, e.name))}${e.isDirectory() ? "/" : ""}`)
            .sort()
        const files = await list(ours)
        assert.deepStrictEqual(files, await list(theirs))
        assert.include(files, "PG_VERSION")
        assert.isAbove(files.length, 100)
        for (const file of files.filter((f) => !f.endsWith("/"))) {
          const same = (await Fs.readFile(Path.join(ours, file))).equals(await Fs.readFile(Path.join(theirs, file)))
          assert.isTrue(same, file)
        }
      })
    )
  )

  it.effect(
    "an archive cut short fails and leaves no PG_VERSION, so the next start unpacks again; names stay inside",
    () =>
      withDir((dir) =>
        Effect.promise(async () => {
          const tar = Zlib.gunzipSync(await Fs.readFile(templateFile()))
          const cut = Path.join(dir, "cut.tar.gz")
          // cut just after PG_VERSION's header and data block (the archive has entries after it)
          let at = 0
          while (
            at < tar.length &&
            tar
              .subarray(at, at + 100)
              .toString("latin1")
              .split("\0")[0] !== "/PG_VERSION"
          )
            at += 512
          assert.isBelow(at + 1024, tar.length - 1024)
          await Fs.writeFile(cut, Zlib.gzipSync(tar.subarray(0, at + 1024)))
          const target = Path.join(dir, "db")
          const failure = await extractTemplate(cut, target).then(
            () => undefined,
            (error: unknown) => String(error)
          )
          assert.match(failure ?? "", /ends early/)
          assert.isFalse(fs.existsSync(Path.join(target, "PG_VERSION")))
          assert.strictEqual(templateFor(target, cut), cut)
          // an entry naming a path outside the directory lands inside it
          const header = Buffer.alloc(512)
          header.write("../escape", 0)
          header.write("0000600\0", 100)
          header.write("00000000000\0", 124)
          header.write("0", 156)
          header.write("        ", 148)
          let sum = 0
          for (const byte of header) sum += byte
          header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148)
          const escaping = Path.join(dir, "escaping.tar.gz")
          await Fs.writeFile(escaping, Zlib.gzipSync(Buffer.concat([header, Buffer.alloc(1024)])))
          const refused = await extractTemplate(escaping, Path.join(dir, "inner")).then(
            () => undefined,
            (error: unknown) => String(error)
          )
          assert.match(refused ?? "", /holds no PG_VERSION/)
          assert.isFalse(fs.existsSync(Path.join(dir, "escape")))
          assert.isTrue(fs.existsSync(Path.join(dir, "inner", "escape")))
        })
      )
  )

  it.effect(
    "a first open unpacks it (worker thread and in process) into a cluster like initdb's, reopened as is",
    () =>
      withDir((dir) =>
        Effect.gen(function* () {
          // A template of its own (the build's, plus a marker table), so the test sees it was used.
          const marked = Path.join(dir, "marked.tar.gz")
          yield* Effect.promise(async () => {
            const db = await PGlite.create("memory://", {
              loadDataDir: new Blob([await Fs.readFile(templateFile())])
            })
            await db.exec("CREATE TABLE from_template (id int)")
            const dump = await db.dumpDataDir("gzip")
            await db.close()
            await Fs.writeFile(marked, Buffer.from(await dump.arrayBuffer()))
          })
          const expected = {
            databases: ["postgres", "template0", "template1"],
            user: { rolname: "postgres", rolsuper: true },
            marker: [{ n: 0 }],
            n: 1
          }
          const inThread = Path.join(dir, "thread")
          const first = yield* Effect.provide(
            cluster,
            PgliteClient.layerWorker({ dataDir: inThread, template: marked }).pipe(Layer.orDie)
          )
          assert.deepStrictEqual(first, expected)
          assert.isTrue(fs.existsSync(Path.join(inThread, "PG_VERSION")))
          const reopened = yield* Effect.provide(
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              return yield* sql<{ id: number }>`SELECT id FROM t`
            }),
            PgliteClient.layerWorker({ dataDir: inThread, template: marked }).pipe(Layer.orDie)
          )
          assert.deepStrictEqual(reopened, [{ id: 1 }])
          const inProcess = Path.join(dir, "process")
          const second = yield* Effect.provide(
            cluster,
            PgliteClient.layer({ dataDir: inProcess, template: marked }).pipe(Layer.orDie)
          )
          assert.deepStrictEqual(second, expected)
        })
      ),
    120_000
  )
})
