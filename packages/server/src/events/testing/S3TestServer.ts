/**
 * A real S3-compatible server for tests: s3rver on 127.0.0.1, an ephemeral port, objects in a temp
 * directory, one bucket created at start; stopped and removed when the scope closes.
 */
import { Effect, type Scope } from "effect"
import { createRequire } from "node:module"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"

/** The access key s3rver accepts by default (any signature made with it verifies). */
export const s3rverCredentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const

/** A running s3rver. */
export interface S3TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string
  readonly bucket: string
  /** Where s3rver keeps the objects (`<directory>/<bucket>/…`), for raw-byte scans. */
  readonly directory: string
  /** Stops the server early (fault tests); closing the scope afterwards is harmless. */
  readonly stop: Effect.Effect<void>
}

interface S3rverInstance {
  run(): Promise<{ readonly address: string; readonly port: number }>
  close(): Promise<void>
}

type S3rverConstructor = new (options: {
  readonly address: string
  readonly port: number
  readonly silent: boolean
  readonly directory: string
  readonly configureBuckets: ReadonlyArray<{ readonly name: string }>
}) => S3rverInstance

// s3rver ships no type declarations: its constructor is typed here, at the one place it is loaded.
const S3rver = createRequire(import.meta.url)("s3rver") as S3rverConstructor

/** Starts s3rver with `bucket`; stops it and deletes its directory when the scope closes. */
export const start = (bucket = "svc-test"): Effect.Effect<S3TestServer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const directory = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-s3rver-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    const server = new S3rver({
      address: "127.0.0.1",
      port: 0,
      silent: true,
      directory,
      configureBuckets: [{ name: bucket }]
    })
    let running = true
    const stop = Effect.promise(async () => {
      if (!running) return
      running = false
      await server.close()
    })
    const info = yield* Effect.acquireRelease(
      Effect.promise(() => server.run()),
      () => stop
    )
    return { endpoint: `http://127.0.0.1:${info.port}`, bucket, directory, stop }
  })
