/**
 * Gives back the memory of relayed body chunks soon after they were written (issue 16). Every
 * chunk of a streamed body is a fresh Buffer (Node's HTTP parser copies each request chunk out of
 * its read buffer; undici hands over each response chunk), and its memory is freed only when V8
 * collects the Buffer. A stream allocates almost no JavaScript, so no scavenge runs while it flows
 * and V8 starts a full collection only after ~64 MB of such memory piled up: a 100 MB upload left
 * 30–70 MB of dead chunks waiting (measured as `process.memoryUsage().arrayBuffers`). After every
 * {@link budgetBytes} relayed, one asynchronous minor GC is requested; it frees the dead chunks
 * (they die young), so what a stream leaves waiting stays near the budget.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

/** Relayed bytes between two requested minor collections. */
export const budgetBytes = 8 * 1024 * 1024

type Collect = (options: { readonly type: "minor"; readonly execution: "async" }) => Promise<void>

let collect: Collect | null | undefined
let relayed = 0

/** V8's `gc`, obtained without exposing it to svc's own context (`null` when unavailable). */
const collector = (): Collect | null => {
  try {
    setFlagsFromString("--expose-gc")
    const gc: unknown = runInNewContext("gc")
    return typeof gc === "function" ? (gc as Collect) : null
  } catch {
    return null
  } finally {
    setFlagsFromString("--no-expose-gc")
  }
}

/** Counts `bytes` of a relayed body chunk; past the budget, requests one minor collection. */
export const chunkRelayed = (bytes: number): void => {
  relayed += bytes
  if (relayed < budgetBytes) return
  relayed = 0
  if (collect === undefined) collect = collector()
  if (collect !== null) void collect({ type: "minor", execution: "async" })
}
