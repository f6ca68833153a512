/**
 * Envelope encryption of secret columns (SECURITY.md "Encryption at rest"): values are sealed
 * under the data key of the nearest key resource of their namespace (else the service-wide `root`
 * data key), data keys are stored wrapped by the root key, rotation adds a version and queues a
 * re-encryption, and every older version still decrypts.
 *
 * Caches: unwrapped data keys forever (immutable per key id and version), the namespace → current
 * key resolution for `resolutionTtl`, cleared locally by `invalidate`. Nothing read inside a SQL
 * transaction is cached (it may roll back).
 */
import { DataKeyRepo, rootDataKeyId } from "@svc/sql/DataKeyRepo"
import { Clock, Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { RootKeySource } from "../config/SvcConfig.ts"
import * as Envelope from "./Envelope.ts"
import type { CipherContext, KeyRef } from "./Envelope.ts"
import { loadRootKey, type RootKeyUnusable } from "./RootKey.ts"

export type { CipherContext, KeyRef }

/** How long a namespace's current data key is cached (another process's rotation is seen within it). */
export const resolutionTtl: Duration.Duration = Duration.seconds(5)

/** A ciphertext did not decrypt (tampered, copied to another row or column, unknown key); no key material. */
export class DecryptionFailed extends Schema.TaggedError<DecryptionFailed>()("DecryptionFailed", {
  table: Schema.String,
  column: Schema.String,
  rowId: Schema.String,
  reason: Schema.Literals(["malformed", "authentication failed", "unknown data key"])
}) {
  override get message() {
    return `cannot decrypt ${this.table}.${this.column} of ${this.rowId}: ${this.reason}`
  }
}

/** The configured root key is not the one that wrapped the stored data keys. */
export class RootKeyMismatch extends Schema.TaggedError<RootKeyMismatch>()("RootKeyMismatch", {
  configured: Schema.String,
  stored: Schema.Array(Schema.String)
}) {
  override get message() {
    return `the configured encryption root key (id ${this.configured}) is not the one that wrapped the stored data keys (id ${this.stored.join(", ")}): configure the original root key (svc refuses to start rather than write secrets it could not read back)`
  }
}

/** Sealing and opening of secret column values. */
export class Encryption extends Context.Service<
  Encryption,
  {
    /** Seals the JSON encoding of `value` for one row and column under its namespace's current data key. */
    readonly encrypt: (context: CipherContext, value: unknown) => Effect.Effect<string>
    readonly decrypt: (context: CipherContext, ciphertext: string) => Effect.Effect<unknown, DecryptionFailed>
    /** The data key (id and version) new values of this namespace are sealed with. */
    readonly currentKey: (namespace: string) => Effect.Effect<KeyRef>
    /** Stores version 1 of a key unless present; joins the caller's SQL transaction. */
    readonly provisionKey: (keyId: string) => Effect.Effect<void>
    /** Adds version n+1 and queues a re-encryption, atomically; concurrent rotations number in turn. */
    readonly rotate: (keyId: string) => Effect.Effect<{ readonly version: number }>
    /** Forgets cached namespace resolutions (after a key is created, rotated or deleted). */
    readonly invalidate: () => void
  }
>()("@svc/server/Encryption") {
  /** Loads the root key from its configured source, then checks it against the stored data keys. */
  static readonly layerNoDeps = (
    source: RootKeySource
  ): Layer.Layer<Encryption, RootKeyUnusable | RootKeyMismatch, SqlClient.SqlClient | DataKeyRepo> =>
    Layer.effect(Encryption, Effect.flatMap(loadRootKey(source), make))

  /** With the root key bytes given directly (tests). */
  static readonly layerKey = (
    rootKey: Uint8Array
  ): Layer.Layer<Encryption, RootKeyMismatch, SqlClient.SqlClient | DataKeyRepo> =>
    Layer.effect(Encryption, make(rootKey))
}

const orDie = <A, R>(effect: Effect.Effect<A, SqlError, R>): Effect.Effect<A, never, R> => Effect.orDie(effect)

const make = Effect.fnUntraced(function* (rootKey: Uint8Array) {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* DataKeyRepo
  const rootId = Envelope.rootKeyId(rootKey)
  const stored = yield* orDie(repo.rootKeyIds)
  const foreign = stored.filter((id) => id !== rootId)
  if (foreign.length > 0) return yield* new RootKeyMismatch({ configured: rootId, stored: foreign })

  const dataKeys = new Map<string, Uint8Array>()
  const resolutions = new Map<string, { readonly ref: KeyRef; readonly expiresAt: number }>()
  let generation = 0
  const ttlMs = Duration.toMillis(resolutionTtl)
  const inTransaction = Effect.map(Effect.serviceOption(sql.transactionService), Option.isSome)

  const dataKey = Effect.fnUntraced(function* (ref: KeyRef) {
    const cacheKey = `${ref.keyId}#${ref.version}`
    const cached = dataKeys.get(cacheKey)
    if (cached !== undefined) return Option.some(cached)
    const row = yield* orDie(repo.find(ref.keyId, ref.version))
    if (Option.isNone(row)) return Option.none<Uint8Array>()
    if (row.value.rootKeyId !== rootId) {
      return yield* Effect.die(new RootKeyMismatch({ configured: rootId, stored: [row.value.rootKeyId] }))
    }
    const key = Envelope.unwrapDataKey(rootKey, ref, row.value.wrapped)
    if (key === undefined) {
      return yield* Effect.die(new Error(`data key ${ref.keyId} version ${ref.version} does not unwrap`))
    }
    if (!(yield* inTransaction)) dataKeys.set(cacheKey, key)
    return Option.some(key)
  })

  const provisionKey = Effect.fn("Encryption.provisionKey")(function* (keyId: string) {
    if (Option.isSome(yield* orDie(repo.latestVersion(keyId)))) return
    const ref = { keyId, version: 1 }
    const createdAt = new Date(yield* Clock.currentTimeMillis)
    const wrapped = Envelope.wrapDataKey(rootKey, ref, Envelope.generateKey())
    // A concurrent provisioning may win: its row is the one every process reads back.
    yield* orDie(repo.insert({ ...ref, wrapped, rootKeyId: rootId, createdAt }))
  })

  const resolve = Effect.fnUntraced(function* (namespace: string) {
    const nearest = yield* orDie(repo.nearestKey(namespace))
    if (Option.isSome(nearest) && nearest.value.version !== null) {
      return { keyId: nearest.value.keyId, version: nearest.value.version }
    }
    const keyId = Option.isSome(nearest) ? nearest.value.keyId : rootDataKeyId
    const latest = yield* orDie(repo.latestVersion(keyId))
    if (Option.isSome(latest)) return { keyId, version: latest.value }
    // The root default is created on first use, and so is a key resource's from before encryption.
    yield* provisionKey(keyId)
    return { keyId, version: Option.getOrElse(yield* orDie(repo.latestVersion(keyId)), () => 1) }
  })

  const currentKey = Effect.fnUntraced(function* (namespace: string) {
    const now = yield* Clock.currentTimeMillis
    const cached = resolutions.get(namespace)
    if (cached !== undefined && cached.expiresAt > now) return cached.ref
    const started = generation
    const ref = yield* resolve(namespace)
    if (started === generation && !(yield* inTransaction)) resolutions.set(namespace, { ref, expiresAt: now + ttlMs })
    return ref
  })

  const encrypt = Effect.fnUntraced(function* (context: CipherContext, value: unknown) {
    const ref = yield* currentKey(context.namespace)
    const key = yield* dataKey(ref)
    if (Option.isNone(key)) return yield* Effect.die(new Error(`data key ${ref.keyId} version ${ref.version} vanished`))
    return Envelope.encrypt(key.value, ref, context, value)
  })

  const decrypt = Effect.fnUntraced(function* (context: CipherContext, ciphertext: string) {
    const failed = (reason: DecryptionFailed["reason"]) =>
      new DecryptionFailed({ table: context.table, column: context.column, rowId: context.rowId, reason })
    const ref = Envelope.headerOf(ciphertext)
    if (ref === undefined) return yield* failed("malformed")
    const key = yield* dataKey(ref)
    if (Option.isNone(key)) return yield* failed("unknown data key")
    const result = Envelope.decrypt(key.value, context, ciphertext)
    if (!result.ok) return yield* failed(result.problem)
    return result.value
  })

  const invalidate = () => {
    generation++
    resolutions.clear()
  }

  const rotate = Effect.fn("Encryption.rotate")(function* (keyId: string) {
    const version = yield* orDie(
      sql.withTransaction(
        Effect.gen(function* () {
          yield* provisionKey(keyId)
          // Version 1's row lock serialises rotations of this key: the next one reads our version.
          yield* repo.lockFirst(keyId)
          const latest = Option.getOrElse(yield* repo.latestVersion(keyId), () => 1)
          const ref = { keyId, version: latest + 1 }
          const createdAt = new Date(yield* Clock.currentTimeMillis)
          const wrapped = Envelope.wrapDataKey(rootKey, ref, Envelope.generateKey())
          yield* repo.insert({ ...ref, wrapped, rootKeyId: rootId, createdAt })
          yield* repo.enqueueReencryption(keyId, createdAt)
          return ref.version
        })
      )
    )
    invalidate()
    return { version }
  })

  return Encryption.of({ encrypt, decrypt, currentKey, provisionKey, rotate, invalidate })
})
