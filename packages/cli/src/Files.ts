import { Effect, FileSystem } from "effect"
import type { PlatformError } from "effect/PlatformError"
import { CliFailure } from "./CliFailure.ts"

const describe = (error: PlatformError): string => {
  const reason = error.reason
  if (reason._tag === "NotFound") return "file not found"
  if (reason._tag === "PermissionDenied") return "permission denied"
  return reason.message
}

/** Reads a whole file as bytes; a failure names the file and its role (`what`). */
export const readBytes = Effect.fnUntraced(function* (path: string, what: string) {
  const fs = yield* FileSystem.FileSystem
  return yield* fs
    .readFile(path)
    .pipe(Effect.mapError((error) => new CliFailure({ message: `cannot read ${what} "${path}": ${describe(error)}` })))
})

/** Reads a whole file as UTF-8 text; a failure names the file and its role (`what`). */
export const readText = (path: string, what: string) =>
  Effect.map(readBytes(path, what), (bytes) => new TextDecoder().decode(bytes))

/** Whether a path exists (false when it cannot be checked). */
export const fileExists = Effect.fnUntraced(function* (path: string) {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false))
})
