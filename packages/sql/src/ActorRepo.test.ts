import { assert, layer } from "@effect/vitest"
import { ActorId } from "@svc/domain/Ids"
import { DateTime, Effect, Layer, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import { ActorRepo, type ConfiguredActor } from "./ActorRepo.ts"
import * as Migrations from "./Migrations.ts"
import * as TestDatabase from "./TestDatabase.ts"

const admin: ConfiguredActor = {
  externalId: "admin",
  namespace: "root",
  name: "admin",
  labels: { team_name: "ops" },
  permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }]
}
const reader: ConfiguredActor = {
  externalId: "reader",
  namespace: "root.acme",
  permissions: [{ namespace: "root.acme", resources: ["connections"], verbs: ["get", "list"], resourceIds: ["cxn_x"] }]
}

for (const [backend, db] of TestDatabase.backends) {
  const ActorRepoTest = ActorRepo.layer.pipe(Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db)))

  layer(ActorRepoTest, { timeout: "60 seconds" })(`ActorRepo (${backend})`, (it) => {
    it.effect("syncConfigured upserts by external id, keeps ids stable and is idempotent", () =>
      Effect.gen(function* () {
        const repo = yield* ActorRepo
        const first = yield* repo.syncConfigured([admin, reader])
        assert.deepStrictEqual(
          first.map((a) => a.externalId),
          ["admin", "reader"]
        )
        const [adminRow, readerRow] = first
        assert.isTrue(Schema.is(ActorId)(adminRow?.id))
        assert.strictEqual(adminRow?.source, "config")
        assert.deepStrictEqual(adminRow?.labels, { team_name: "ops" })
        assert.deepStrictEqual(adminRow?.permissions, admin.permissions)
        assert.deepStrictEqual(readerRow?.permissions, reader.permissions)
        assert.strictEqual(readerRow?.name, readerRow?.id)
        assert.deepStrictEqual(readerRow?.annotations, {})

        yield* TestClock.adjust("1 minute")
        const second = yield* repo.syncConfigured([admin, reader])
        assert.deepStrictEqual(second, first)
      })
    )

    it.effect("syncConfigured writes changes with a new updatedAt and retires actors no longer configured", () =>
      Effect.gen(function* () {
        const repo = yield* ActorRepo
        const [before] = yield* repo.syncConfigured([admin, reader])
        yield* TestClock.adjust("1 hour")
        const now = yield* DateTime.now
        const changed = {
          ...admin,
          namespace: "root.ops",
          permissions: [{ namespace: "root", resources: ["actors"], verbs: ["get"] }]
        }
        const [after] = yield* repo.syncConfigured([changed])
        assert.strictEqual(after?.id, before?.id)
        assert.strictEqual(after?.namespace, "root.ops")
        assert.deepStrictEqual(after?.permissions, changed.permissions)
        assert.isTrue(DateTime.Equivalence(after!.updatedAt, now))
        assert.isTrue(DateTime.Equivalence(after!.createdAt, before!.createdAt))

        assert.isTrue(Option.isNone(yield* repo.findByExternalId("reader")))
        const readded = yield* repo.syncConfigured([changed, reader])
        const readerAgain = readded.find((a) => a.externalId === "reader")
        assert.isDefined(readerAgain)
        assert.isTrue(DateTime.Equivalence(readerAgain!.createdAt, now))
      })
    )

    it.effect("findByExternalId and findById return live actors only", () =>
      Effect.gen(function* () {
        const repo = yield* ActorRepo
        const [row] = yield* repo.syncConfigured([admin])
        assert.deepStrictEqual(yield* repo.findByExternalId("admin"), Option.some(row!))
        assert.deepStrictEqual(yield* repo.findById(row!.id), Option.some(row!))
        assert.isTrue(Option.isNone(yield* repo.findByExternalId("nobody")))
        yield* repo.syncConfigured([])
        assert.isTrue(Option.isNone(yield* repo.findById(row!.id)))
        assert.isTrue(Option.isNone(yield* repo.findByExternalId("admin")))
      })
    )
  })
}
