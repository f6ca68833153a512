import { assert, layer } from "@effect/vitest"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import { jsonb, ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Envelope from "./Envelope.ts"
import { Encryption } from "./Encryption.ts"
import { Reencryption } from "./Reencryption.ts"
import { at, envelope, fixtureId } from "@svc/sql/TestRows"
import { WebhookRepo } from "@svc/sql/WebhookRepo"

const createdAt = at(0)

const Test = Reencryption.layerNoDeps.pipe(
  Layer.provideMerge(Encryption.layerKey(Envelope.generateKey())),
  Layer.provideMerge(Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, DataKeyRepo.layer, WebhookRepo.layer)),
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pglite))
)

interface Stored {
  readonly configurationEnc: string | null
  readonly credentialsEnc: string | null
  readonly legacyConfiguration: unknown
}

const stored = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<Stored>`SELECT configuration_enc, credentials_enc, legacy_configuration FROM connections WHERE id = ${id}`,
      (rows) => rows[0]!
    )
  )

const ctx = (id: string, namespace: string, column: "configuration" | "credentials") => ({
  table: "connections",
  column,
  rowId: id,
  namespace
})

const version = (ciphertext: string | null) => {
  const ref = ciphertext === null ? undefined : Envelope.headerOf(ciphertext)
  return ref === undefined ? "none" : `${ref.keyId}@${ref.version}`
}

layer(Test, { timeout: "60 seconds" })("Reencryption (PGlite)", (it) => {
  const connectorId = fixtureId("cxr", "r")
  const setup = Effect.gen(function* () {
    const repo = yield* ResourceRepo
    yield* repo.insert("connectors", {
      id: connectorId,
      ...envelope("root", connectorId),
      state: "draft",
      version: 1,
      type: "x"
    })
    yield* Effect.flatMap(ConnectorRepo, (connectors) =>
      connectors.insertVersion(connectorId, { type: "x" }, createdAt)
    )
  })

  /** A connection with its secrets sealed now (or a legacy plaintext configuration). */
  const connection = (
    id: string,
    namespace: string,
    secrets: { configuration?: unknown; credentials?: unknown; legacy?: Record<string, unknown> }
  ) =>
    Effect.gen(function* () {
      const repo = yield* ResourceRepo
      const encryption = yield* Encryption
      const seal = (column: "configuration" | "credentials", value: unknown) =>
        value === undefined ? Effect.succeed(null) : encryption.encrypt(ctx(id, namespace, column), value)
      yield* repo.insert("connections", {
        id,
        ...envelope(namespace, id),
        connectorId,
        connectorVersion: 1,
        state: "configured",
        healthState: "healthy",
        setupStepId: null,
        configurationEnc: yield* seal("configuration", secrets.configuration),
        credentialsEnc: yield* seal("credentials", secrets.credentials),
        ...(secrets.legacy === undefined ? {} : { legacyConfiguration: jsonb(secrets.legacy) })
      })
    })

  const keyIn = (id: string, namespace: string) =>
    Effect.gen(function* () {
      const repo = yield* ResourceRepo
      const encryption = yield* Encryption
      yield* repo.insert("keys", { id, ...envelope(namespace, id) })
      yield* encryption.provisionKey(id)
      encryption.invalidate()
    })

  it.effect("re-seals v1 secrets under v2 after a rotation and seals legacy plaintext", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const reencryption = yield* Reencryption
      const repo = yield* ResourceRepo
      yield* setup
      yield* keyIn("key_r", "root.r")
      yield* connection("cxn_r1", "root.r", { configuration: { region: "eu" }, credentials: { token: "t1" } })
      yield* connection("cxn_r2", "root.r.team", { credentials: { token: "t2" } })
      yield* connection("cxn_r3", "root.other", { credentials: { token: "t3" } })
      yield* connection("cxn_r4", "root.r", { legacy: { region: "us", n: [1] } })
      yield* connection("cxn_r5", "root.r", { legacy: { deleted: true } })
      yield* repo.softDelete("connections", "cxn_r5", createdAt)
      const other = yield* stored("cxn_r3")
      assert.strictEqual(version((yield* stored("cxn_r1")).credentialsEnc), "key_r@1")

      assert.deepStrictEqual(yield* encryption.rotate("key_r"), { version: 2 })
      assert.deepStrictEqual(yield* reencryption.sweep, { rewritten: 3, skipped: 0, failed: 0 })

      const r1 = yield* stored("cxn_r1")
      assert.deepStrictEqual([version(r1.configurationEnc), version(r1.credentialsEnc)], ["key_r@2", "key_r@2"])
      assert.deepStrictEqual(
        yield* encryption.decrypt(ctx("cxn_r1", "root.r", "configuration"), r1.configurationEnc!),
        {
          region: "eu"
        }
      )
      assert.deepStrictEqual(yield* encryption.decrypt(ctx("cxn_r1", "root.r", "credentials"), r1.credentialsEnc!), {
        token: "t1"
      })
      const r2 = yield* stored("cxn_r2")
      assert.deepStrictEqual([r2.configurationEnc, version(r2.credentialsEnc)], [null, "key_r@2"])
      const r4 = yield* stored("cxn_r4")
      assert.deepStrictEqual(
        [version(r4.configurationEnc), r4.credentialsEnc, r4.legacyConfiguration],
        ["key_r@2", null, null]
      )
      assert.deepStrictEqual(
        yield* encryption.decrypt(ctx("cxn_r4", "root.r", "configuration"), r4.configurationEnc!),
        {
          region: "us",
          n: [1]
        }
      )
      assert.deepStrictEqual(yield* stored("cxn_r3"), other)
      assert.deepStrictEqual((yield* stored("cxn_r5")).legacyConfiguration, { deleted: true })
      assert.deepStrictEqual(yield* reencryption.sweep, { rewritten: 0, skipped: 0, failed: 0 })
    })
  )

  it.effect("never undoes a concurrent write: the compare-and-swap loser is skipped", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const sql = yield* SqlClient.SqlClient
      yield* keyIn("key_cas", "root.cas")
      yield* connection("cxn_cas1", "root.cas", { configuration: { a: 1 }, credentials: { token: "old" } })
      yield* connection("cxn_cas2", "root.cas", { credentials: { token: "old" } })
      yield* encryption.rotate("key_cas")
      // A token refresh lands between the sweep's read and its write.
      const refresh = (id: string) =>
        Effect.flatMap(
          encryption.encrypt(ctx(id, "root.cas", "credentials"), { token: "refreshed" }),
          (sealed) => sql`UPDATE connections SET credentials_enc = ${sealed} WHERE id = ${id}`
        )
      const real = yield* DataKeyRepo
      const racing = DataKeyRepo.of({
        ...real,
        swapSecrets: (current, next) =>
          current.id === "cxn_cas1"
            ? Effect.andThen(refresh(current.id), real.swapSecrets(current, next))
            : real.swapSecrets(current, next)
      })
      const sweep = Effect.flatMap(Reencryption, (r) => r.sweep).pipe(
        Effect.provide(Layer.fresh(Reencryption.layerNoDeps)),
        Effect.provideService(DataKeyRepo, racing)
      )
      assert.deepStrictEqual(yield* sweep, { rewritten: 1, skipped: 1, failed: 0 })
      const lost = yield* stored("cxn_cas1")
      assert.deepStrictEqual(
        yield* encryption.decrypt(ctx("cxn_cas1", "root.cas", "credentials"), lost.credentialsEnc!),
        {
          token: "refreshed"
        }
      )
      assert.strictEqual(version(lost.configurationEnc), "key_cas@1", "the lost row is left for the next sweep")
      assert.strictEqual(version((yield* stored("cxn_cas2")).credentialsEnc), "key_cas@2")

      // The same race on a single row, read before the concurrent write.
      yield* encryption.rotate("key_cas")
      const [before] = (yield* real.secretsPage("cxn_cas1", 1)).filter((row) => row.id === "cxn_cas2")
      yield* refresh("cxn_cas2")
      const reencryption = yield* Reencryption
      assert.strictEqual(yield* reencryption.rewrite(before!), "lost")
      const kept = yield* stored("cxn_cas2")
      assert.deepStrictEqual(
        yield* encryption.decrypt(ctx("cxn_cas2", "root.cas", "credentials"), kept.credentialsEnc!),
        {
          token: "refreshed"
        }
      )
      assert.deepStrictEqual(yield* reencryption.sweep, { rewritten: 1, skipped: 0, failed: 0 })
      assert.strictEqual(version((yield* stored("cxn_cas1")).configurationEnc), "key_cas@3")
    })
  )

  it.effect("leaves a ciphertext copied from another row alone and counts it", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const reencryption = yield* Reencryption
      const sql = yield* SqlClient.SqlClient
      yield* keyIn("key_copy", "root.copy")
      yield* connection("cxn_copy1", "root.copy", { credentials: { token: "mine" } })
      yield* connection("cxn_copy2", "root.copy", {})
      const source = yield* stored("cxn_copy1")
      yield* sql`UPDATE connections SET credentials_enc = ${source.credentialsEnc} WHERE id = 'cxn_copy2'`
      const error = yield* Effect.flip(
        encryption.decrypt(ctx("cxn_copy2", "root.copy", "credentials"), source.credentialsEnc!)
      )
      assert.strictEqual(error.reason, "authentication failed")
      yield* encryption.rotate("key_copy")
      assert.deepStrictEqual(yield* reencryption.sweep, { rewritten: 1, skipped: 0, failed: 1 })
      assert.strictEqual((yield* stored("cxn_copy2")).credentialsEnc, source.credentialsEnc)
    })
  )

  it.effect("re-seals webhook signing secrets under the new key version", () =>
    Effect.gen(function* () {
      const encryption = yield* Encryption
      const reencryption = yield* Reencryption
      const repo = yield* ResourceRepo
      const sql = yield* SqlClient.SqlClient
      yield* keyIn("key_wh", "root.wh")
      const hookContext = { table: "webhooks", column: "secret", rowId: "wh_r1", namespace: "root.wh" }
      yield* repo.insert("webhooks", {
        id: "wh_r1",
        ...envelope("root.wh", "wh_r1"),
        url: "https://hooks.example.com/",
        events: null,
        labelSelector: null,
        description: null,
        secretEnc: yield* encryption.encrypt(hookContext, "whsec_c2VjcmV0"),
        state: "enabled"
      })
      const sealed = () =>
        Effect.map(
          sql<{ secretEnc: string }>`SELECT secret_enc FROM webhooks WHERE id = 'wh_r1'`,
          (rows) => rows[0]!.secretEnc
        )
      assert.strictEqual(version(yield* sealed()), "key_wh@1")
      yield* encryption.rotate("key_wh")
      const result = yield* reencryption.sweep
      assert.isAtLeast(result.rewritten, 1)
      assert.strictEqual(version(yield* sealed()), "key_wh@2")
      assert.strictEqual(yield* encryption.decrypt(hookContext, yield* sealed()), "whsec_c2VjcmV0")
      // Current already: the next sweep leaves it alone.
      const again = yield* sealed()
      yield* reencryption.sweep
      assert.strictEqual(yield* sealed(), again)
    })
  )
})
