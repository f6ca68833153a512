import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import { fileURLToPath } from "node:url"
import type { Swagger2Document } from "./Swagger2.ts"
import { staleDocuments, swaggerDocument, writeDocuments } from "./SwaggerFiles.ts"

/** Where the committed Swagger 2.0 documents live (`docs/swagger` at the repository root). */
export const swaggerDirectory: string = fileURLToPath(new URL("../../../../docs/swagger/", import.meta.url))

let cached: { readonly api: Swagger2Document; readonly "admin-api": Swagger2Document } | undefined

/**
 * The Swagger 2.0 documents of the api and admin-api services (spec 9.2), exactly as committed under
 * `docs/swagger` and as served at `/swagger.json`.
 */
export const swaggerDocuments = (): { readonly api: Swagger2Document; readonly "admin-api": Swagger2Document } =>
  (cached ??= { api: swaggerDocument(ApiV1), "admin-api": swaggerDocument(AdminApiV1) })

/** `node generate.ts` writes the documents; `node generate.ts --check` exits 1 naming each stale file. */
const main = async (args: ReadonlyArray<string>): Promise<number> => {
  if (args.includes("--check")) {
    const stale = await staleDocuments(swaggerDocuments(), swaggerDirectory)
    for (const message of stale) process.stderr.write(`${message}\n`)
    return stale.length === 0 ? 0 : 1
  }
  for (const file of await writeDocuments(swaggerDocuments(), swaggerDirectory)) process.stdout.write(`wrote ${file}\n`)
  return 0
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2))
