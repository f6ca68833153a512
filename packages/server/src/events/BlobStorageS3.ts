/**
 * The S3-compatible provider of `BlobStorage` (`BlobStorage.layerS3`), apart so the AWS SDK is
 * loaded only by a process whose `appMetrics.blobStorage` is S3.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
  S3ServiceException
} from "@aws-sdk/client-s3"
import { Duration, Effect, Option, Redacted } from "effect"
import {
  BlobStorage,
  BlobStorageError,
  checkKey,
  errorCode,
  type Operation,
  type S3StorageOptions
} from "./BlobStorage.ts"

/** An S3 error's name and HTTP status; any other error as the other providers name it. */
const s3ErrorCode = (e: unknown): string => {
  if (e instanceof S3ServiceException) {
    const status = e.$metadata.httpStatusCode
    return status === undefined ? e.name : `${e.name} (HTTP ${status})`
  }
  return errorCode(e)
}

export const makeS3Client = (options: S3StorageOptions): S3Client =>
  new S3Client({
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.region !== undefined
      ? { region: options.region }
      : options.endpoint !== undefined
        ? { region: "us-east-1" }
        : {}),
    forcePathStyle: options.forcePathStyle ?? false,
    // Only the checksums S3 requires: several S3-compatible stores reject the newer default ones.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    ...(options.credentials !== undefined
      ? {
          credentials: {
            accessKeyId: options.credentials.accessKeyId,
            secretAccessKey: Redacted.value(options.credentials.secretAccessKey),
            ...(options.credentials.sessionToken !== undefined
              ? { sessionToken: Redacted.value(options.credentials.sessionToken) }
              : {})
          }
        }
      : {})
  })

export const makeS3 = (client: S3Client, options: S3StorageOptions): BlobStorage["Service"] => {
  const rawPrefix = options.prefix ?? ""
  const prefix = rawPrefix === "" || rawPrefix.endsWith("/") ? rawPrefix : `${rawPrefix}/`
  const timeout = options.timeout ?? Duration.seconds(30)
  const bucket = options.bucket
  const attempt = <A>(operation: Operation, key: string, run: (signal: AbortSignal) => Promise<A>) =>
    Effect.andThen(
      checkKey("s3", operation, key),
      Effect.tryPromise({
        try: run,
        catch: (e) => new BlobStorageError({ provider: "s3", operation, reason: s3ErrorCode(e) })
      }).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () => Effect.fail(new BlobStorageError({ provider: "s3", operation, reason: "timed out" }))
        })
      )
    )

  return BlobStorage.of({
    put: (key, bytes) =>
      attempt("put", key, (abortSignal) =>
        client
          .send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}${key}`, Body: bytes }), { abortSignal })
          .then(() => undefined)
      ),
    get: (key) =>
      attempt("get", key, async (abortSignal) => {
        try {
          const response = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}${key}` }), {
            abortSignal
          })
          if (response.Body === undefined) return Option.some(new Uint8Array(0))
          return Option.some(await response.Body.transformToByteArray())
        } catch (e) {
          if (e instanceof NoSuchKey) return Option.none<Uint8Array>()
          throw e
        }
      }),
    remove: (key) =>
      attempt("remove", key, (abortSignal) =>
        client
          .send(new DeleteObjectCommand({ Bucket: bucket, Key: `${prefix}${key}` }), { abortSignal })
          .then(() => undefined)
      )
  })
}
