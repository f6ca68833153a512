/**
 * Blob storage of full request recordings (spec 6.1, 8.2 `appMetrics.blobStorage`): a key → bytes
 * store on the local filesystem (atomic writes, owner-only files, sharded directories), any
 * S3-compatible object store, or memory (tests). Keys are validated the same way on every
 * provider, so none can escape its root; errors name the provider, the operation and an error
 * code, never a key's content, a credential or a payload.
 */
import { Context, type Duration, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { SvcConfig } from "../config/SvcConfig.ts"

/** A blob operation failed; carries the provider, the operation and an error code only. */
export class BlobStorageError extends Schema.TaggedError<BlobStorageError>()("BlobStorageError", {
  provider: Schema.Literals(["filesystem", "s3", "memory"]),
  operation: Schema.Literals(["put", "get", "remove"]),
  reason: Schema.String
}) {
  override get message(): string {
    return `blob storage (${this.provider}) ${this.operation} failed: ${this.reason}`
  }
}

type Provider = BlobStorageError["provider"]
export type Operation = BlobStorageError["operation"]

/** Longest key accepted: keeps every filesystem name under NAME_MAX (255) with room for the temp suffix. */
export const maxKeyLength = 200

const segmentPattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/**
 * True for a key every provider accepts: `/`-separated segments of `[A-Za-z0-9._-]`, each starting
 * with a letter or digit (so no `.`, `..`, hidden or empty segment), at most {@link maxKeyLength}.
 */
export const isValidKey = (key: string): boolean =>
  key.length > 0 && key.length <= maxKeyLength && key.split("/").every((segment) => segmentPattern.test(segment))

export const checkKey = (
  provider: Provider,
  operation: Operation,
  key: string
): Effect.Effect<void, BlobStorageError> =>
  isValidKey(key) ? Effect.void : Effect.fail(new BlobStorageError({ provider, operation, reason: "invalid key" }))

/** Stores and reads opaque blobs by key. */
export class BlobStorage extends Context.Service<
  BlobStorage,
  {
    /** Stores `bytes` under `key`, replacing any previous blob whole (readers never see a partial one). */
    put(key: string, bytes: Uint8Array): Effect.Effect<void, BlobStorageError>
    get(key: string): Effect.Effect<Option.Option<Uint8Array>, BlobStorageError>
    /** Removes the blob; removing an absent key succeeds. */
    remove(key: string): Effect.Effect<void, BlobStorageError>
  }
>()("@svc/server/BlobStorage") {
  /** Files under `root` (created on first write, mode 0700; files 0600). */
  static readonly layerFilesystem = (root: string): Layer.Layer<BlobStorage> =>
    Layer.sync(BlobStorage, () => makeFilesystem(path.resolve(root)))

  /** In-process store (tests); copies bytes in and out. */
  static readonly layerMemory: Layer.Layer<BlobStorage> = Layer.sync(BlobStorage, () => makeMemory())

  /**
   * An S3-compatible object store; the client is destroyed with the layer. The AWS SDK
   * (`BlobStorageS3.ts`) is loaded only when this layer is built: other providers never load it.
   */
  static readonly layerS3 = (options: S3StorageOptions): Layer.Layer<BlobStorage> =>
    Layer.effect(
      BlobStorage,
      Effect.flatMap(
        Effect.promise(() => import("./BlobStorageS3.ts")),
        ({ makeS3Client, makeS3 }) =>
          Effect.map(
            Effect.acquireRelease(
              Effect.sync(() => makeS3Client(options)),
              (client) => Effect.sync(() => client.destroy())
            ),
            (client) => makeS3(client, options)
          )
      )
    )

  /** The provider `appMetrics.blobStorage` of the running configuration names. */
  static readonly layerFromConfig: Layer.Layer<BlobStorage, never, SvcConfig> = Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* SvcConfig
      const blob = config.appMetrics.blobStorage
      switch (blob.provider) {
        case "memory":
          return BlobStorage.layerMemory
        case "filesystem":
          return BlobStorage.layerFilesystem(blob.path ?? path.join(config.dataDir, "blobs"))
        case "s3":
          return BlobStorage.layerS3({
            bucket: blob.bucket ?? "",
            endpoint: blob.endpoint,
            region: blob.region,
            prefix: blob.prefix,
            forcePathStyle: blob.forcePathStyle
          })
      }
    })
  )
}

/** Options of {@link BlobStorage.layerS3}. */
export interface S3StorageOptions {
  readonly bucket: string
  /** An S3-compatible endpoint (MinIO, Ceph, R2, …); absent: AWS S3. */
  readonly endpoint?: string | undefined
  /** Absent: `us-east-1` with an `endpoint`, else the AWS default chain (`AWS_REGION`, profile). */
  readonly region?: string | undefined
  /** Prepended to every key; a `/` is added when it does not end with one. */
  readonly prefix?: string | undefined
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (most self-hosted stores). */
  readonly forcePathStyle?: boolean | undefined
  /** Absent: the AWS default provider chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profile, role). */
  readonly credentials?:
    | {
        readonly accessKeyId: string
        readonly secretAccessKey: Redacted.Redacted<string>
        readonly sessionToken?: Redacted.Redacted<string> | undefined
      }
    | undefined
  /** Bound on each operation, retries included. Default 30 s. */
  readonly timeout?: Duration.Input | undefined
}

export const errorCode = (e: unknown): string => {
  if (typeof e === "object" && e !== null && "code" in e && typeof e.code === "string") return e.code
  return e instanceof Error ? e.name : "unknown error"
}

const isNotFound = (e: unknown): boolean =>
  typeof e === "object" && e !== null && "code" in e && (e.code === "ENOENT" || e.code === "ENOTDIR")

const makeMemory = (): BlobStorage["Service"] => {
  const blobs = new Map<string, Uint8Array>()
  return BlobStorage.of({
    put: (key, bytes) =>
      Effect.andThen(
        checkKey("memory", "put", key),
        Effect.sync(() => {
          blobs.set(key, new Uint8Array(bytes))
        })
      ),
    get: (key) =>
      Effect.andThen(
        checkKey("memory", "get", key),
        Effect.sync(() => Option.map(Option.fromUndefinedOr(blobs.get(key)), (bytes) => new Uint8Array(bytes)))
      ),
    remove: (key) =>
      Effect.andThen(
        checkKey("memory", "remove", key),
        Effect.sync(() => {
          blobs.delete(key)
        })
      )
  })
}

/**
 * Where a key lives under `root`: `<root>/<h0h1>/<h2h3>/<key with "/" as "~">`, `h` the SHA-256 of
 * the key, so no directory grows past a few hundred entries per million blobs.
 */
export const filesystemPath = (root: string, key: string): string => {
  const hash = createHash("sha256").update(key, "utf8").digest("hex")
  return path.join(root, hash.slice(0, 2), hash.slice(2, 4), key.replaceAll("/", "~"))
}

const makeFilesystem = (root: string): BlobStorage["Service"] => {
  const attempt = <A>(operation: Operation, run: () => Promise<A>) =>
    Effect.tryPromise({
      try: run,
      catch: (e) => new BlobStorageError({ provider: "filesystem", operation, reason: errorCode(e) })
    })
  const locate = (operation: Operation, key: string) =>
    Effect.andThen(checkKey("filesystem", operation, key), () => {
      const file = filesystemPath(root, key)
      const relative = path.relative(root, file)
      // Unreachable with a valid key; kept so a future change to the layout cannot write outside the root.
      return relative.startsWith("..") || path.isAbsolute(relative)
        ? Effect.fail(new BlobStorageError({ provider: "filesystem", operation, reason: "invalid key" }))
        : Effect.succeed(file)
    })

  const writeAtomically = async (file: string, bytes: Uint8Array) => {
    const dir = path.dirname(file)
    await fs.mkdir(dir, { recursive: true, mode: 0o700 })
    // A name no valid key maps to (keys never start with "."), unique per write.
    const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(8).toString("hex")}.tmp`)
    try {
      await fs.writeFile(temp, bytes, { mode: 0o600, flag: "wx" })
      await fs.rename(temp, file)
    } catch (e) {
      await fs.rm(temp, { force: true }).catch(() => undefined)
      throw e
    }
  }

  return BlobStorage.of({
    put: (key, bytes) =>
      Effect.flatMap(locate("put", key), (file) => attempt("put", () => writeAtomically(file, bytes))),
    get: (key) =>
      Effect.flatMap(locate("get", key), (file) =>
        attempt("get", () =>
          fs.readFile(file).then(
            (buffer) => Option.some(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)),
            (e: unknown) => (isNotFound(e) ? Option.none<Uint8Array>() : Promise.reject(e))
          )
        )
      ),
    remove: (key) =>
      Effect.flatMap(locate("remove", key), (file) =>
        attempt("remove", () => fs.rm(file, { force: true }).then(() => undefined))
      )
  })
}
