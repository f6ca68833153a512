/**
 * Golden test of the fast span encoder: for the same spans, `encodeTraces` writes exactly the
 * bytes of effect's own OTLP protobuf serializer (`OtlpSerialization.layerProtobuf`), so the fast
 * path can only differ from effect in speed.
 */
import { Effect } from "effect"
import { OtlpSerialization } from "effect/observability"
import type { OtlpTracer } from "effect/observability"
import { describe, expect, it } from "vitest"
import { type EncodableSpan, encodeTraces } from "./OtlpProtobuf.ts"
import { keyValues } from "./Tracing.ts"

const resource = keyValues(
  Object.entries({ "service.name": "svc-api", "service.version": "1.2.3", "deployment.environment": "test" })
)
const scope = { name: "svc", version: "1.2.3" }

const spans: ReadonlyArray<EncodableSpan> = [
  {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "b7ad6b7169203331",
    parentSpanId: undefined,
    name: "HTTP POST",
    kindNumber: 2,
    startNanos: 1_700_000_000_123_456_789n,
    endNanos: 1_700_000_000_223_456_789n,
    attributeList: [
      "http.request.method",
      "POST",
      "http.response.status_code",
      502,
      "svc.ratio",
      0.25,
      "svc.flag",
      true,
      "url.path",
      "/api/v1/connections/cxn_1/_proxy_raw"
    ],
    exception: { type: "UpstreamError", message: "upstream answered 502" },
    statusCode: 2,
    statusMessage: "upstream answered 502"
  },
  {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "00f067aa0ba902b7",
    parentSpanId: "b7ad6b7169203331",
    name: "HTTP GET",
    kindNumber: 3,
    startNanos: 1_700_000_000_130_000_000n,
    endNanos: 1_700_000_000_200_000_000n,
    attributeList: [
      "server.address",
      "api.example.com",
      "server.port",
      443,
      "svc.connector_version",
      3,
      // Past the fast paths: non-ASCII text, text of 128 characters and more, a negative integer.
      "svc.label.team",
      "équipe ☃",
      "url.path",
      `/api/v1/${"x".repeat(300)}`,
      "svc.offset",
      -5
    ],
    exception: undefined,
    statusCode: 0,
    statusMessage: undefined
  }
]

const pairs = (list: ReadonlyArray<unknown>): Array<readonly [string, unknown]> => {
  const out: Array<readonly [string, unknown]> = []
  for (let i = 0; i < list.length; i += 2) out.push([list[i] as string, list[i + 1]])
  return out
}

/** The same spans as effect's tracer hands them to its serializer. */
const traceData = (): OtlpTracer.TraceData => ({
  resourceSpans: [
    {
      resource: { attributes: resource, droppedAttributesCount: 0 },
      scopeSpans: [
        {
          scope,
          spans: spans.map((s) => ({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId,
            name: s.name,
            kind: s.kindNumber,
            startTimeUnixNano: String(s.startNanos),
            endTimeUnixNano: String(s.endNanos),
            attributes: keyValues(pairs(s.attributeList)),
            droppedAttributesCount: 0,
            events:
              s.exception === undefined
                ? []
                : [
                    {
                      name: "exception",
                      timeUnixNano: String(s.endNanos),
                      attributes: keyValues([
                        ["exception.type", s.exception.type],
                        ["exception.message", s.exception.message]
                      ]),
                      droppedAttributesCount: 0
                    }
                  ],
            droppedEventsCount: 0,
            status: {
              code: (s.statusCode ?? 0) as 0 | 1 | 2,
              ...(s.statusMessage === undefined ? {} : { message: s.statusMessage })
            },
            links: [],
            droppedLinksCount: 0
          }))
        }
      ]
    }
  ]
})

describe("fast span encoder", () => {
  it("writes the bytes of effect's OTLP protobuf serializer for the same spans", async () => {
    const body = await Effect.runPromise(
      Effect.gen(function* () {
        return (yield* OtlpSerialization.OtlpSerialization).traces(traceData())
      }).pipe(Effect.provide(OtlpSerialization.layerProtobuf))
    )
    const expected = body._tag === "Uint8Array" ? body.body : new Uint8Array(0)
    expect(expected.length).toBeGreaterThan(100)
    expect(Buffer.from(encodeTraces(resource, scope, spans)).toString("hex")).toBe(
      Buffer.from(expected).toString("hex")
    )
  })

  it("returns each export's own bytes (the writer's buffer is reused across exports)", () => {
    const first = encodeTraces(resource, scope, spans)
    const copy = Buffer.from(first).toString("hex")
    const second = encodeTraces(resource, scope, spans.slice(0, 1))
    expect(second.length).toBeLessThan(first.length)
    expect(Buffer.from(first).toString("hex")).toBe(copy)
    expect(Buffer.from(encodeTraces(resource, scope, spans)).toString("hex")).toBe(copy)
  })
})
