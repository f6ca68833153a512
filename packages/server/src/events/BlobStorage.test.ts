import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "../config/ConfigLoader.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { BlobStorage, type BlobStorageError, filesystemPath, isValidKey, maxKeyLength } from "./BlobStorage.ts"
import * as S3TestServer from "./testing/S3TestServer.ts"

const bytes = (text: string) => new TextEncoder().encode(text)
const binary = new Uint8Array([0, 1, 2, 127, 128, 254, 255, 0x0a, 0x0d])

const failure = <A>(exit: Exit.Exit<A, BlobStorageError>): BlobStorageError => {
  if (Exit.isSuccess(exit)) return assert.fail("expected the operation to fail")
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  return reason?._tag === "Fail" ? reason.error : assert.fail("expected a BlobStorageError")
}

const traversalKeys = [
  "",
  "/",
  "/etc/passwd",
  "..",
  ".",
  "../outside",
  "a/../../outside",
  "a/..",
  "./a",
  "a/./b",
  "a//b",
  "a/",
  ".hidden",
  "a/.b",
  "..\\outside",
  "a\\..\\b",
  "a b",
  "a\u0000b",
  "%2e%2e/outside",
  "~/x",
  "a~b",
  "-flag",
  "ü",
  "x".repeat(maxKeyLength + 1)
]

/** The behaviour every provider shares. */
const roundTrip = (prefix: string) =>
  Effect.gen(function* () {
    const storage = yield* BlobStorage
    const key = `${prefix}/round-trip/one`
    assert.isTrue(Option.isNone(yield* storage.get(key)))
    yield* storage.put(key, binary)
    assert.deepStrictEqual(Option.getOrThrow(yield* storage.get(key)), binary)
    yield* storage.put(key, bytes("replaced"))
    assert.strictEqual(new TextDecoder().decode(Option.getOrThrow(yield* storage.get(key))), "replaced")
    yield* storage.put(`${prefix}/round-trip/empty`, new Uint8Array(0))
    assert.strictEqual(Option.getOrThrow(yield* storage.get(`${prefix}/round-trip/empty`)).byteLength, 0)
    const large = new Uint8Array(2 * 1024 * 1024 + 3).map((_, i) => (i * 31) % 251)
    yield* storage.put(`${prefix}/round-trip/large`, large)
    assert.deepStrictEqual(Option.getOrThrow(yield* storage.get(`${prefix}/round-trip/large`)), large)
    yield* storage.remove(key)
    assert.isTrue(Option.isNone(yield* storage.get(key)))
    yield* storage.remove(key)
    yield* storage.remove(`${prefix}/never-written`)
  })

const refusesBadKeys = Effect.gen(function* () {
  const storage = yield* BlobStorage
  for (const key of traversalKeys) {
    for (const op of [storage.put(key, bytes("x")), storage.get(key), storage.remove(key)]) {
      const error = failure(yield* Effect.exit(op as Effect.Effect<unknown, BlobStorageError>))
      assert.strictEqual(error.reason, "invalid key", `key ${JSON.stringify(key)}`)
    }
  }
})

describe("BlobStorage keys", () => {
  it("accepts segment keys and refuses traversal, empty, hidden and foreign segments", () => {
    assert.isTrue(isValidKey("request-events/req_01ABC/request"))
    assert.isTrue(isValidKey("a.b_c-d/E9"))
    assert.isTrue(isValidKey("x".repeat(maxKeyLength)))
    for (const key of traversalKeys) assert.isFalse(isValidKey(key), JSON.stringify(key))
  })
})

layer(BlobStorage.layerMemory)("BlobStorage (memory)", (it) => {
  it.effect("round trip", () => roundTrip("mem"))
  it.effect("refuses invalid keys", () => refusesBadKeys)
  it.effect("stored bytes are a copy of the caller's", () =>
    Effect.gen(function* () {
      const storage = yield* BlobStorage
      const source = bytes("original")
      yield* storage.put("copy/one", source)
      source.fill(0)
      const read = Option.getOrThrow(yield* storage.get("copy/one"))
      read.fill(0)
      assert.strictEqual(new TextDecoder().decode(Option.getOrThrow(yield* storage.get("copy/one"))), "original")
    })
  )
})

class TempDir extends Context.Service<TempDir, { readonly dir: string; readonly root: string }>()("test/TempDir") {
  static readonly layer = Layer.effect(
    TempDir,
    Effect.map(
      Effect.acquireRelease(
        Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-blobs-"))),
        (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
      ),
      (dir) => ({ dir, root: path.join(dir, "root") })
    )
  )
}

const listAll = (dir: string) => Effect.promise(() => fs.readdir(dir, { recursive: true }))

const filesystem = Layer.unwrap(
  Effect.map(Effect.service(TempDir), ({ root }) => BlobStorage.layerFilesystem(root))
).pipe(Layer.provideMerge(TempDir.layer))

layer(filesystem)("BlobStorage (filesystem)", (it) => {
  it.effect("round trip", () => roundTrip("fs"))

  it.effect("refuses invalid keys and writes nothing outside its root", () =>
    Effect.gen(function* () {
      const { dir } = yield* TempDir
      yield* Effect.promise(() => fs.writeFile(path.join(dir, "sentinel"), "keep"))
      const before = yield* listAll(dir)
      yield* refusesBadKeys
      assert.deepStrictEqual((yield* listAll(dir)).sort(), [...before].sort())
      assert.strictEqual(yield* Effect.promise(() => fs.readFile(path.join(dir, "sentinel"), "utf8")), "keep")
    })
  )

  it.effect("files are owner-only in sharded directories; no temp file remains", () =>
    Effect.gen(function* () {
      const { root } = yield* TempDir
      const storage = yield* BlobStorage
      const key = "request-events/req_SHARD/request"
      yield* storage.put(key, bytes("sealed"))
      const file = filesystemPath(root, key)
      assert.match(path.relative(root, file), /^[0-9a-f]{2}\/[0-9a-f]{2}\/request-events~req_SHARD~request$/)
      const stat = yield* Effect.promise(() => fs.stat(file))
      assert.strictEqual(stat.mode & 0o777, 0o600)
      const dirStat = yield* Effect.promise(() => fs.stat(path.dirname(file)))
      assert.strictEqual(dirStat.mode & 0o077, 0)
      assert.strictEqual(yield* Effect.promise(() => fs.readFile(file, "utf8")), "sealed")
      const entries = yield* listAll(root)
      assert.isFalse(
        entries.some((e) => e.endsWith(".tmp")),
        entries.join(", ")
      )
    })
  )

  it.effect("concurrent writes of one key leave one whole blob", () =>
    Effect.gen(function* () {
      const { root } = yield* TempDir
      const storage = yield* BlobStorage
      const key = "race/one"
      const versions = Array.from({ length: 16 }, (_, i) => new Uint8Array(64 * 1024).fill(i + 1))
      yield* Effect.forEach(versions, (v) => storage.put(key, v), { concurrency: "unbounded", discard: true })
      const stored = Option.getOrThrow(yield* storage.get(key))
      assert.strictEqual(stored.byteLength, 64 * 1024)
      assert.isTrue(
        versions.some((v) => Buffer.compare(v, stored) === 0),
        "the stored blob is one of the written ones"
      )
      const siblings = yield* Effect.promise(() => fs.readdir(path.dirname(filesystemPath(root, key))))
      assert.deepStrictEqual(siblings, ["race~one"])
    })
  )
})

describe("BlobStorage (filesystem) failures", () => {
  it.effect("a root that cannot be a directory fails with an error code, no content", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* Effect.acquireRelease(
          Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-blobs-bad-"))),
          (d) => Effect.promise(() => fs.rm(d, { recursive: true, force: true }))
        )
        const root = path.join(dir, "a-file")
        yield* Effect.promise(() => fs.writeFile(root, "not a directory"))
        const storage = yield* Effect.provide(Effect.service(BlobStorage), BlobStorage.layerFilesystem(root))
        const error = failure(yield* Effect.exit(storage.put("k/one", bytes("PAYLOAD-MARKER"))))
        assert.strictEqual(error.provider, "filesystem")
        assert.strictEqual(error.operation, "put")
        assert.strictEqual(error.reason, "ENOTDIR")
        assert.notInclude(error.message, "PAYLOAD-MARKER")
      })
    )
  )
})

class S3Server extends Context.Service<S3Server, S3TestServer.S3TestServer>()("test/S3Server") {
  static readonly layer = Layer.effect(S3Server, S3TestServer.start())
}

const s3Options = (server: S3TestServer.S3TestServer, prefix?: string) => ({
  bucket: server.bucket,
  endpoint: server.endpoint,
  forcePathStyle: true,
  prefix,
  credentials: {
    accessKeyId: S3TestServer.s3rverCredentials.accessKeyId,
    secretAccessKey: Redacted.make(S3TestServer.s3rverCredentials.secretAccessKey)
  },
  timeout: "10 seconds" as const
})

const s3 = Layer.unwrap(Effect.map(Effect.service(S3Server), (server) => BlobStorage.layerS3(s3Options(server)))).pipe(
  Layer.provideMerge(S3Server.layer)
)

layer(s3, { timeout: "60 seconds" })("BlobStorage (s3 via s3rver on 127.0.0.1)", (it) => {
  it.effect("round trip", () => roundTrip("s3"))
  it.effect("refuses invalid keys", () => refusesBadKeys)

  it.effect("a prefix is prepended with a separating slash", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* S3Server
        const plain = yield* BlobStorage
        const prefixed = yield* Effect.provide(
          Effect.service(BlobStorage),
          BlobStorage.layerS3(s3Options(server, "svc/rec"))
        )
        yield* prefixed.put("a/b", bytes("under the prefix"))
        const seen = Option.getOrThrow(yield* plain.get("svc/rec/a/b"))
        assert.strictEqual(new TextDecoder().decode(seen), "under the prefix")
        assert.isTrue(Option.isNone(yield* plain.get("a/b")))
      })
    )
  )

  it.effect("layerFromConfig: provider s3 with endpoint, forcePathStyle and the AWS default credential chain", () =>
    Effect.gen(function* () {
      const server = yield* S3Server
      const cwd = yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-blobs-config-")))
      const config = yield* loadConfig({
        cwd,
        env: {
          SVC__appMetrics__blobStorage__provider: "s3",
          SVC__appMetrics__blobStorage__bucket: server.bucket,
          SVC__appMetrics__blobStorage__endpoint: server.endpoint,
          SVC__appMetrics__blobStorage__forcePathStyle: "true",
          SVC__appMetrics__blobStorage__prefix: "from-config/"
        }
      })
      assert.strictEqual(config.appMetrics.blobStorage.forcePathStyle, true)
      const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY }
      const restore = Effect.sync(() => {
        for (const [name, value] of [
          ["AWS_ACCESS_KEY_ID", saved.id],
          ["AWS_SECRET_ACCESS_KEY", saved.secret]
        ] as const) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      })
      yield* Effect.gen(function* () {
        process.env.AWS_ACCESS_KEY_ID = S3TestServer.s3rverCredentials.accessKeyId
        process.env.AWS_SECRET_ACCESS_KEY = S3TestServer.s3rverCredentials.secretAccessKey
        const fromConfig = yield* Effect.provide(
          Effect.service(BlobStorage),
          BlobStorage.layerFromConfig.pipe(Layer.provide(Layer.succeed(SvcConfig, config)))
        )
        yield* fromConfig.put("cfg/one", bytes("via config"))
        const plain = yield* BlobStorage
        assert.strictEqual(
          new TextDecoder().decode(Option.getOrThrow(yield* plain.get("from-config/cfg/one"))),
          "via config"
        )
      }).pipe(Effect.scoped, Effect.ensuring(restore))
      yield* Effect.promise(() => fs.rm(cwd, { recursive: true, force: true }))
    })
  )
})

describe("BlobStorage (s3) failures", () => {
  it.effect("a stopped server fails each operation with an error code, no content", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* S3TestServer.start()
        const storage = yield* Effect.provide(Effect.service(BlobStorage), BlobStorage.layerS3(s3Options(server)))
        yield* storage.put("up/one", bytes("before"))
        yield* server.stop
        const error = failure(yield* Effect.exit(storage.put("up/two", bytes("PAYLOAD-MARKER"))))
        assert.strictEqual(error.provider, "s3")
        assert.strictEqual(error.reason, "ECONNREFUSED")
        assert.notInclude(error.message, "PAYLOAD-MARKER")
        assert.notInclude(error.message, S3TestServer.s3rverCredentials.secretAccessKey)
        assert.strictEqual(failure(yield* Effect.exit(storage.get("up/one"))).reason, "ECONNREFUSED")
      })
    )
  )
})

describe("BlobStorage.layerFromConfig", () => {
  const withConfig = (env: Record<string, string>) =>
    Effect.gen(function* () {
      const cwd = yield* Effect.acquireRelease(
        Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-blobs-config-"))),
        (d) => Effect.promise(() => fs.rm(d, { recursive: true, force: true }))
      )
      const config = yield* Effect.orDie(loadConfig({ cwd, env }))
      const storage = yield* Effect.provide(
        Effect.service(BlobStorage),
        BlobStorage.layerFromConfig.pipe(Layer.provide(Layer.succeed(SvcConfig, config)))
      )
      return { config, storage }
    })

  it.effect("filesystem by default, under <dataDir>/blobs", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { config, storage } = yield* withConfig({})
        assert.strictEqual(config.appMetrics.blobStorage.provider, "filesystem")
        yield* storage.put("default/one", bytes("on disk"))
        const file = filesystemPath(path.join(config.dataDir, "blobs"), "default/one")
        assert.strictEqual(yield* Effect.promise(() => fs.readFile(file, "utf8")), "on disk")
      })
    )
  )

  it.effect("memory when configured: nothing on disk", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { config, storage } = yield* withConfig({ SVC__appMetrics__blobStorage__provider: "memory" })
        yield* storage.put("mem/one", bytes("in memory"))
        assert.strictEqual(new TextDecoder().decode(Option.getOrThrow(yield* storage.get("mem/one"))), "in memory")
        const exists = yield* Effect.promise(() =>
          fs.stat(config.dataDir).then(
            () => true,
            () => false
          )
        )
        assert.isFalse(exists)
      })
    )
  )
})
