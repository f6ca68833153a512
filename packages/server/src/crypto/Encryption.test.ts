import { assert, layer } from "@effect/vitest"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import { jsonb, ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Envelope from "./Envelope.ts"
import { type CipherContext, Encryption } from "./Encryption.ts"

const rootKey = Envelope.generateKey()

const database = (db: typeof TestDatabase.pglite) =>
  Layer.mergeAll(ResourceRepo.layer, DataKeyRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

const context = (namespace: string, rowId = "cxn_row1"): CipherContext => ({
  table: "connections",
  column: "credentials",
  rowId,
  namespace
})

const keyResource = (id: string, namespace: string, createdSeconds: number) =>
  Effect.gen(function* () {
    const repo = yield* ResourceRepo
    const encryption = yield* Encryption
    const createdAt = new Date(Date.UTC(2025, 0, 1, 0, 0, createdSeconds))
    yield* repo.withTransaction(
      Effect.andThen(
        repo.insert("keys", {
          id,
          namespace,
          name: id,
          labels: jsonb({}),
          annotations: jsonb({}),
          createdAt,
          updatedAt: createdAt
        }),
        encryption.provisionKey(id)
      )
    )
    encryption.invalidate()
  })

const headerKey = (ciphertext: string) => {
  const ref = Envelope.headerOf(ciphertext)
  return ref === undefined ? "none" : `${ref.keyId}@${ref.version}`
}

layer(Encryption.layerKey(rootKey).pipe(Layer.provideMerge(database(TestDatabase.pglite))), {
  timeout: "60 seconds"
})("Encryption (PGlite)", (it) => {
  it.effect("seals under the root default until a key resource applies; the nearest ancestor's key wins", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const sealedKey = (namespace: string) =>
        Effect.map(encryption.encrypt(context(namespace), { token: "t" }), headerKey)
      assert.strictEqual(yield* sealedKey("root.ns1"), "root@1")
      yield* keyResource("key_ns1a", "root.ns1.a", 1)
      assert.strictEqual(yield* sealedKey("root.ns1.a"), "key_ns1a@1")
      assert.strictEqual(yield* sealedKey("root.ns1.a.b"), "key_ns1a@1")
      assert.strictEqual(yield* sealedKey("root.ns1.ab"), "root@1")
      assert.strictEqual(yield* sealedKey("root.ns1"), "root@1")
      yield* keyResource("key_ns1ab", "root.ns1.a.b", 2)
      assert.strictEqual(yield* sealedKey("root.ns1.a.b"), "key_ns1ab@1")
      assert.strictEqual(yield* sealedKey("root.ns1.a.b.c"), "key_ns1ab@1")
      assert.strictEqual(yield* sealedKey("root.ns1.a.c"), "key_ns1a@1")
      yield* keyResource("key_ns1ab_newer", "root.ns1.a.b", 3)
      assert.strictEqual(yield* sealedKey("root.ns1.a.b"), "key_ns1ab_newer@1")
      const repo = yield* ResourceRepo
      yield* repo.softDelete("keys", "key_ns1ab_newer", new Date())
      encryption.invalidate()
      assert.strictEqual(yield* sealedKey("root.ns1.a.b"), "key_ns1ab@1")
    })
  )

  it.effect("decrypts only in the row, column and namespace it was sealed for", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const sealed = yield* encryption.encrypt(context("root.ns2", "cxn_a"), { token: "secret", n: 1 })
      assert.deepStrictEqual(yield* encryption.decrypt(context("root.ns2", "cxn_a"), sealed), { token: "secret", n: 1 })
      for (const other of [
        context("root.ns2", "cxn_b"),
        { ...context("root.ns2", "cxn_a"), column: "configuration" },
        { ...context("root.ns2", "cxn_a"), table: "actors" },
        context("root.ns3", "cxn_a")
      ]) {
        const error = yield* Effect.flip(encryption.decrypt(other, sealed))
        assert.strictEqual(error.reason, "authentication failed")
        assert.isFalse(error.message.includes("secret"))
      }
      const malformed = yield* Effect.flip(encryption.decrypt(context("root.ns2"), '{"token":"x"}'))
      assert.strictEqual(malformed.reason, "malformed")
      const unknown = yield* Effect.flip(encryption.decrypt(context("root.ns2"), "v1.key_gone.9.AAAAAAAAAAAAAAAA.AAAA"))
      assert.strictEqual(unknown.reason, "unknown data key")
    })
  )

  it.effect(
    "rotation adds a version: old ciphertexts still decrypt, new ones carry it, a re-encryption is queued",
    () =>
      Effect.gen(function* () {
        const encryption = yield* Encryption
        const keys = yield* DataKeyRepo
        yield* keyResource("key_rot", "root.ns4", 1)
        const before = yield* encryption.encrypt(context("root.ns4"), "v1 value")
        assert.strictEqual(headerKey(before), "key_rot@1")
        const queued = (yield* keys.pendingReencryptions(1000)).length
        assert.deepStrictEqual(yield* encryption.rotate("key_rot"), { version: 2 })
        assert.deepStrictEqual(
          (yield* keys.pendingReencryptions(1000)).slice(queued).map((task) => task.keyId),
          ["key_rot"]
        )
        const after = yield* encryption.encrypt(context("root.ns4"), "v2 value")
        assert.strictEqual(headerKey(after), "key_rot@2")
        assert.strictEqual(yield* encryption.decrypt(context("root.ns4"), before), "v1 value")
        assert.strictEqual(yield* encryption.decrypt(context("root.ns4"), after), "v2 value")
        const [third, fourth] = yield* Effect.all([encryption.rotate("key_rot"), encryption.rotate("key_rot")], {
          concurrency: 2
        })
        assert.deepStrictEqual([third?.version, fourth?.version].sort(), [3, 4])
        assert.strictEqual(headerKey(yield* encryption.encrypt(context("root.ns4"), "x")), "key_rot@4")
      })
  )

  it.effect("stores data keys wrapped by the root key, never raw", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const keys = yield* DataKeyRepo
      yield* keyResource("key_wrap", "root.ns5", 1)
      yield* encryption.rotate("key_wrap")
      for (const version of [1, 2]) {
        const row = Option.getOrThrow(yield* keys.find("key_wrap", version))
        assert.strictEqual(row.rootKeyId, Envelope.rootKeyId(rootKey))
        const raw = Envelope.unwrapDataKey(rootKey, { keyId: "key_wrap", version }, row.wrapped)
        assert.isDefined(raw)
        const stored = Buffer.from(row.wrapped, "base64")
        assert.isFalse(stored.includes(Buffer.from(raw!)), "the wrapped form must not contain the data key")
        assert.isFalse(row.wrapped.includes(Buffer.from(raw!).toString("base64")))
        assert.isUndefined(Envelope.unwrapDataKey(Envelope.generateKey(), { keyId: "key_wrap", version }, row.wrapped))
      }
    })
  )

  it.effect("a wrong root key refuses to start; a rolled-back provisioning is not kept", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(Encryption.layerKey(Envelope.generateKey()))))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
      assert.strictEqual(error?._tag === "Fail" ? error.error._tag : undefined, "RootKeyMismatch")
      assert.include(
        error?._tag === "Fail" ? error.error.message : "",
        `the one that wrapped the stored data keys (id ${Envelope.rootKeyId(rootKey)})`
      )
      const encryption = yield* Encryption
      const keys = yield* DataKeyRepo
      const sql = yield* SqlClient.SqlClient
      yield* sql
        .withTransaction(Effect.andThen(encryption.provisionKey("key_rolled_back"), Effect.fail("abort")))
        .pipe(Effect.ignore)
      assert.isTrue(Option.isNone(yield* keys.latestVersion("key_rolled_back")))
    })
  )
})

layer(Encryption.layerKey(rootKey).pipe(Layer.provideMerge(database(TestDatabase.pgliteMemory))), {
  timeout: "60 seconds"
})("Encryption caches (PGlite)", (it) => {
  it.effect("nothing read inside a rolled-back transaction is cached; resolutions expire after 5 s", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const sql = yield* SqlClient.SqlClient
      // The root default is created inside a transaction that rolls back: its key must not be remembered.
      yield* sql
        .withTransaction(Effect.andThen(encryption.encrypt(context("root.c"), "a"), Effect.fail("abort")))
        .pipe(Effect.ignore)
      // Another process then creates the root default with different material.
      const other = yield* Effect.scoped(
        Effect.map(Layer.build(Encryption.layerKey(rootKey)), (services) => Context.get(services, Encryption))
      )
      const sealedElsewhere = yield* other.encrypt(context("root.c"), "from the other process")
      assert.strictEqual(yield* encryption.decrypt(context("root.c"), sealedElsewhere), "from the other process")
      assert.strictEqual(headerKey(yield* encryption.encrypt(context("root.c"), "b")), "root@1")
      // A rotation by the other process is seen here once the cached resolution expires.
      assert.deepStrictEqual(yield* other.rotate("root"), { version: 2 })
      assert.strictEqual(headerKey(yield* encryption.encrypt(context("root.c"), "c")), "root@1")
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(headerKey(yield* encryption.encrypt(context("root.c"), "d")), "root@2")
    })
  )
})
