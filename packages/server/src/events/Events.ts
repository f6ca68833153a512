/**
 * Request events (spec 8.2): the write buffer every proxied request feeds, full recordings when
 * configured, and the read service of the request-event API, over the app-metrics database.
 */
import { Duration, Layer } from "effect"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { Metrics } from "./Metrics.ts"
import { Recordings } from "./Recordings.ts"
import { RequestEventSink } from "./RequestEventBuffer.ts"
import { RequestEvents, requestEventRepoLayer, resourceSnapshotRepoLayer } from "./RequestEvents.ts"

/**
 * The embedded database shares this process's CPU (in its own thread), and each statement costs
 * it about 5 ms on top of its rows: request events are written in fewer, larger batches there.
 */
const embeddedSinkOptions = { flushInterval: Duration.seconds(1), batchSize: 2000 } as const

/**
 * One sink (one buffer, flushed when the servers have stopped), the recordings store, and the
 * read service; needs `AppMetricsSql`, encryption and the config.
 */
export const layerNoDeps = (config: ResolvedConfig) =>
  Layer.mergeAll(
    RequestEventSink.layerNoDeps(config.database.provider === "pglite" ? embeddedSinkOptions : {}),
    RequestEvents.layerNoDeps,
    Metrics.layerNoDeps
  ).pipe(
    // The recordings store always: new recordings only when `fullRequestRecording` is `always`
    // (ProxyEvents checks), while earlier ones stay readable when it is turned off.
    Layer.provideMerge(Recordings.layer()),
    Layer.provide(requestEventRepoLayer),
    // The worker's snapshot singleton writes what the metrics query reads.
    Layer.provideMerge(resourceSnapshotRepoLayer)
  )
