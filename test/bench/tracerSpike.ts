/**
 * The tracer spike of issue 33 (docs/telemetry.md "Cost"): CPU time per span, started from plain
 * code with the attributes of a proxied call, ended, batched and encoded as OTLP protobuf, of
 * (a) svc's tracer (`Tracing.makeTracer` + the fast encoder `OtlpProtobuf.encodeTraces`) and
 * (b) effect's `OtlpTracer` (its spans, batching and serializer; the HTTP post answered at once
 * in memory). Any allow-list wrapper over (b) costs at least (b). In-process, no network.
 *
 *   node test/bench/tracerSpike.ts [--spans 200000] [--rounds 5]
 */
import { parseArgs } from "node:util"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"
import { encodeTraces } from "../../packages/server/src/telemetry/OtlpProtobuf.ts"
import { type ExportedSpan, keyValues, makeTracer, nowNanos } from "../../packages/server/src/telemetry/Tracing.ts"

const { values } = parseArgs({ options: { spans: { type: "string" }, rounds: { type: "string" } } })
const spans = Number(values.spans ?? 200_000)
const rounds = Number(values.rounds ?? 5)
const batch = 1000

const attributes = {
  "http.request.method": "GET",
  "server.address": "127.0.0.1",
  "server.port": 8080,
  "svc.request.type": "proxy",
  "svc.namespace": "root.bench",
  "svc.connector_id": "cnr_bench",
  "svc.connector_version": 1,
  "svc.connection_id": "cxn_bench"
}

const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

const resource = keyValues(Object.entries({ "service.name": "svc-api", "service.version": "0" }))

/** (a) svc's tracer: spans pushed to a buffer, encoded every `batch` spans. */
const svcRound = (): number => {
  let buffer: Array<ExportedSpan> = []
  let bytes = 0
  const tracer = makeTracer({ push: (s) => buffer.push(s) }, 1)
  const start = cpuMs()
  for (let i = 0; i < spans; i++) {
    const span = tracer.start("HTTP GET", "client", undefined, attributes)
    span.attribute("http.response.status_code", 200)
    span.end(nowNanos(), Exit.void)
    if (buffer.length >= batch) {
      bytes += encodeTraces(resource, { name: "svc", version: "0" }, buffer).length
      buffer = []
    }
  }
  if (bytes === 0) throw new Error("nothing encoded")
  return ((cpuMs() - start) * 1000) / spans
}

/** (b) effect's OtlpTracer: its spans, its exporter's batching and serializer; the post answered in memory. */
const effectRound = Effect.gen(function* () {
  let posted = 0
  const client = HttpClient.make((request) =>
    Effect.sync(() => {
      posted++
      return HttpClientResponse.fromWeb(request, new Response(null, { status: 200 }))
    })
  )
  const scope = yield* Scope.make()
  const tracer = yield* OtlpTracer.make({
    url: "http://collector/v1/traces",
    resource: { serviceName: "svc-api", serviceVersion: "0" },
    exportInterval: "1 hour",
    maxBatchSize: batch
  }).pipe(
    Effect.provideService(Scope.Scope, scope),
    Effect.provideService(HttpClient.HttpClient, client),
    Effect.provide(Layer.merge(OtlpExporter.layerFlusher, OtlpSerialization.layerProtobuf))
  )
  const start = cpuMs()
  for (let i = 0; i < spans; i++) {
    const span = tracer.span({
      name: "HTTP GET",
      parent: Option.none(),
      annotations: Context.empty(),
      links: [],
      startTime: nowNanos(),
      kind: "client",
      root: true,
      sampled: true
    })
    for (const key in attributes) span.attribute(key, attributes[key as keyof typeof attributes])
    span.attribute("http.response.status_code", 200)
    span.end(nowNanos(), Exit.void)
    // Let the exports the full batches forked run.
    if (i % batch === batch - 1) yield* Effect.yieldNow
  }
  yield* Scope.close(scope, Exit.void)
  const perSpan = ((cpuMs() - start) * 1000) / spans
  if (posted === 0) throw new Error("nothing exported")
  return perSpan
})

const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const a: Array<number> = []
const b: Array<number> = []
for (let r = 0; r < rounds; r++) {
  a.push(svcRound())
  b.push(await Effect.runPromise(effectRound))
}
console.log(`spans per round: ${spans}, rounds: ${rounds} (alternating), CPU µs per span (median; all rounds)`)
console.log(`svc tracer + fast encoder : ${median(a).toFixed(2)} µs (${a.map((x) => x.toFixed(2)).join(", ")})`)
console.log(`effect OtlpTracer         : ${median(b).toFixed(2)} µs (${b.map((x) => x.toFixed(2)).join(", ")})`)
