/**
 * Gives back the memory of relayed body chunks soon after they were written (issue 16). Every
 * chunk of a streamed body is a fresh Buffer (Node's HTTP parser copies each request chunk out of
 * its read buffer; undici hands over each response chunk), and its memory is freed only when V8
 * collects the Buffer. A stream allocates almost no JavaScript, so no scavenge runs while it flows
 * and V8 starts a full collection only after ~64 MB of such memory piled up: a 100 MB upload left
 * 30–70 MB of dead chunks waiting (measured as `process.memoryUsage().arrayBuffers`). After every
 * {@link budgetBytes} relayed, one asynchronous minor GC is requested; it frees the dead chunks
 * (they die young), so what a stream leaves waiting stays near the budget.
 *
 * The collector is V8's `gc`, exposed under {@link relayGcName} by the flag {@link relayGcFlag},
 * which the launcher (`Launcher.ts`) gives `svc serve` when Node starts (issue 31: V8's flags are
 * never changed at run time). A process started without it (`SVC_NODE_OPTIONS` replacing the
 * launcher's flags, a platform without `execve`) relays the same way and leaves the dead chunks
 * to V8's own schedule.
 */

/** Relayed bytes between two requested minor collections. */
export const budgetBytes = 8 * 1024 * 1024

/** The global V8's `gc` is exposed as. */
export const relayGcName = "__svcRelayGc"
/** The Node option that exposes it (given at start by the launcher). */
export const relayGcFlag = `--expose-gc-as=${relayGcName}`

type Collect = (options: { readonly type: "minor"; readonly execution: "async" }) => Promise<void>

const collector: unknown = (globalThis as Record<string, unknown>)[relayGcName]
const collect: Collect | undefined = typeof collector === "function" ? (collector as Collect) : undefined

let relayed = 0

/** Counts `bytes` of a relayed body chunk; past the budget, requests one minor collection. */
export const chunkRelayed = (bytes: number): void => {
  relayed += bytes
  if (relayed < budgetBytes) return
  relayed = 0
  if (collect !== undefined) void collect({ type: "minor", execution: "async" })
}
