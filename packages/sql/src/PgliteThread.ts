/**
 * The worker-thread side of `PgliteClient.layerWorker`: one PGlite instance on `dataDir`, owned by
 * this thread, answering the statements the client posts one at a time (the client serialises
 * them, as it does in process: PGlite has one session). Rows decode with the same parsers as the
 * in-process client; parameters arrive already serialised to text. Errors go back as their
 * message and PostgreSQL code (and constraint), which the client classifies as in process.
 */
import { parentPort, workerData } from "node:worker_threads"
import { PGlite } from "@electric-sql/pglite"
import { pgliteParsers } from "./PgliteParsers.ts"
import { startParams } from "./PgliteSettings.ts"
import { extractTemplate } from "./PgliteTemplate.ts"

/** A statement posted by the client. */
export interface ThreadRequest {
  readonly id: number
  readonly kind: "query" | "close"
  readonly sql?: string
  readonly values?: ReadonlyArray<string | null>
  readonly rowMode?: "object" | "array"
  readonly paramTypes?: ReadonlyArray<number>
}

/** The answer to one request. */
export type ThreadResponse =
  | {
      readonly id: number
      readonly ok: true
      readonly result?: {
        readonly rows: ReadonlyArray<unknown>
        readonly affectedRows?: number | undefined
        readonly fields: ReadonlyArray<{ readonly name: string; readonly dataTypeID: number }>
        readonly command?: string | undefined
      }
    }
  | {
      readonly id: number
      readonly ok: false
      readonly error: { readonly message: string; readonly code?: string; readonly constraint?: string }
    }

const port = parentPort
if (port === null) throw new Error("PgliteThread runs as a worker thread")
const passThrough = new Proxy({}, { get: () => (value: unknown) => value })

const errorOf = (cause: unknown) => {
  const message = cause instanceof Error ? cause.message : "PGlite query failed"
  const record = typeof cause === "object" && cause !== null ? (cause as Record<string, unknown>) : {}
  return {
    message,
    ...(typeof record.code === "string" ? { code: record.code } : {}),
    ...(typeof record.constraint === "string" ? { constraint: record.constraint } : {})
  }
}

const { dataDir, template } = workerData as { dataDir: string; template?: string | undefined }
const opening = (template === undefined ? Promise.resolve() : extractTemplate(template, dataDir)).then(() =>
  PGlite.create(dataDir, { parsers: pgliteParsers, startParams: startParams() })
)
opening.then(
  () => port.postMessage({ id: 0, ok: true } satisfies ThreadResponse),
  (cause: unknown) => port.postMessage({ id: 0, ok: false, error: errorOf(cause) } satisfies ThreadResponse)
)

port.on("message", (request: ThreadRequest) => {
  void opening.then(async (db) => {
    try {
      if (request.kind === "close") {
        if (!db.closed) await db.close()
        port.postMessage({ id: request.id, ok: true } satisfies ThreadResponse)
        return
      }
      const result = await db.query<unknown>(request.sql ?? "", [...(request.values ?? [])], {
        rowMode: request.rowMode ?? "object",
        paramTypes: [...(request.paramTypes ?? [])],
        serializers: passThrough
      })
      const command = (result as { command?: string }).command
      port.postMessage({
        id: request.id,
        ok: true,
        result: {
          rows: result.rows,
          affectedRows: result.affectedRows,
          fields: result.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })),
          command
        }
      } satisfies ThreadResponse)
    } catch (cause) {
      port.postMessage({ id: request.id, ok: false, error: errorOf(cause) } satisfies ThreadResponse)
    }
  })
})
