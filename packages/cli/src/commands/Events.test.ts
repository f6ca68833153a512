import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import { emptyTail, eventLine, pollStart, type TailState, tailFlagErrors, tailFilterFlags, takeNew } from "./Events.ts"

const event = (id: string, timestamp: string, overrides: Partial<RequestEvent> = {}): RequestEvent => ({
  id,
  timestamp,
  namespace: "root.acme",
  type: "proxy",
  method: "GET",
  host: "api.example.com",
  path: "/v1/users",
  response_status_code: 200,
  response_source: "upstream",
  connector_id: "cxr_1",
  connector_version: 1,
  connection_id: "cxn_1",
  actor_id: "act_1",
  duration_ms: 12.4,
  labels: {},
  rate_limit_id: null,
  rate_limit_mode: null,
  rate_limit_bucket: null,
  rate_limit_matched: null,
  full_request_recorded: false,
  ...overrides
})

const ids = (events: ReadonlyArray<RequestEvent>) => events.map((e) => e.id)
const t = (second: number) => `2026-11-24T06:00:${String(second).padStart(2, "0")}.000Z`

describe("takeNew", () => {
  it("prints unseen events oldest first (ties by id) and moves the watermark to the newest", () => {
    const { fresh, state } = takeNew(
      emptyTail,
      [event("req_c", t(5)), event("req_b", t(3)), event("req_a", t(3))],
      60_000
    )
    assert.deepStrictEqual(ids(fresh), ["req_a", "req_b", "req_c"])
    assert.strictEqual(state.watermarkMs, Date.parse(t(5)))
  })

  it("never prints an event twice when the look-back window is read again", () => {
    const first = takeNew(emptyTail, [event("req_b", t(2)), event("req_a", t(1))], 60_000)
    const again = takeNew(first.state, [event("req_c", t(4)), event("req_b", t(2)), event("req_a", t(1))], 60_000)
    assert.deepStrictEqual(ids(again.fresh), ["req_c"])
  })

  it("prints an event stored late (older than the watermark) once it shows up in the window", () => {
    const first = takeNew(emptyTail, [event("req_new", t(10))], 60_000)
    const late = takeNew(first.state, [event("req_new", t(10)), event("req_late", t(4))], 60_000)
    assert.deepStrictEqual(ids(late.fresh), ["req_late"])
    assert.strictEqual(late.state.watermarkMs, Date.parse(t(10)))
  })

  it("forgets ids that fell out of the look-back window", () => {
    const state: TailState = takeNew(emptyTail, [event("req_old", t(1)), event("req_new", t(30))], 10_000).state
    assert.deepStrictEqual([...state.seen.keys()], ["req_new"])
  })

  it("an empty batch changes nothing", () => {
    const { fresh, state } = takeNew(emptyTail, [], 1_000)
    assert.deepStrictEqual(fresh, [])
    assert.strictEqual(state.watermarkMs, undefined)
  })
})

describe("pollStart", () => {
  it("is unbounded before any event, else the watermark minus the look-back", () => {
    assert.strictEqual(pollStart(emptyTail, 60_000), undefined)
    const state = takeNew(emptyTail, [event("req_a", t(30))], 60_000).state
    assert.strictEqual(pollStart(state, 10_000), "2026-11-24T06:00:20.000Z")
  })
})

describe("eventLine", () => {
  it("is one compact line: time, method, status, source, duration, connection, host and path", () => {
    assert.strictEqual(
      eventLine(event("req_a", "2026-11-24T06:00:01.234Z")),
      "2026-11-24 06:00:01.234  GET     200  upstream                   12ms  cxn_1  api.example.com/v1/users"
    )
    assert.strictEqual(
      eventLine(
        event("req_b", t(1), {
          response_status_code: null,
          response_source: "rate_limit",
          connection_id: null,
          method: "POST"
        })
      ),
      "2026-11-24 06:00:01.000  POST    ---  rate_limit                 12ms  -  api.example.com/v1/users"
    )
  })
})

describe("tailFlagErrors", () => {
  const none = Object.fromEntries(Object.keys(tailFilterFlags).map((name) => [name, Option.none()])) as {
    readonly [K in keyof typeof tailFilterFlags]: Option.Option<string>
  }
  it("checks each filter with the server's parser and the line count", () => {
    assert.deepStrictEqual(tailFlagErrors({ ...none, lines: 10 }), [])
    assert.deepStrictEqual(
      tailFlagErrors({
        ...none,
        statusCodeRange: Option.some("200-299"),
        namespace: Option.some("root.a.**"),
        lines: 0
      }),
      []
    )
    const errors = tailFlagErrors({
      ...none,
      statusCodeRange: Option.some("299-200"),
      response_source: Option.some("cache"),
      lines: 1001
    })
    assert.strictEqual(errors.length, 3)
    assert.match(errors[0] ?? "", /^--statusCodeRange: /)
    assert.match(errors[1] ?? "", /^--response_source: /)
    assert.strictEqual(errors[2], "--lines must be from 0 to 1000")
  })
})
