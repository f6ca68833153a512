/**
 * The series lookup of the plain-code instruments: one series per attribute set whatever the
 * path to it (a status code as a number or as its text, a bound series, attribute sets that are
 * prefixes of one another), and distinct sets stay distinct.
 */
import { describe, expect, it } from "vitest"
import { Meter } from "./Metrics.ts"

describe("Instrument series", () => {
  it("keeps one series per attribute set", () => {
    const meter = new Meter()
    const hist = meter.instrument({ name: "t.duration", description: "d", unit: "s", kind: "histogram" }, [1, 2])
    hist.record(0.5, { method: "GET", status: 200 })
    hist.record(1.5, { method: "GET", status: "200" })
    hist.record(3, { method: "GET" })
    hist.record(4, { method: "GET", status: 200, route: "/a" })
    hist.record(5, { method: "POST", status: 200 })
    const series = meter.series("t.duration").map((s) => ({ ...s.attributes, sum: s.value, count: s.count }))
    expect(series).toHaveLength(4)
    expect(new Set(series)).toEqual(
      new Set([
        { method: "GET", count: 1, sum: 3 },
        { method: "GET", status: "200", count: 2, sum: 2 },
        { method: "GET", status: "200", route: "/a", count: 1, sum: 4 },
        { method: "POST", status: "200", count: 1, sum: 5 }
      ])
    )
  })

  it("moves a bound up-down series like the unbound one", () => {
    const meter = new Meter()
    const active = meter.instrument({ name: "t.active", description: "a", unit: "{request}", kind: "updown" })
    const bound = active.bind({ method: "GET" })
    bound.add(1)
    bound.add(1)
    active.add(1, { method: "GET" })
    bound.add(-1)
    active.add(1, { method: "PUT" })
    const values = Object.fromEntries(meter.series("t.active").map((s) => [s.attributes.method, s.value]))
    expect(values).toEqual({ GET: 2, PUT: 1 })
  })

  it("records a bound histogram and counter in the registry's series, shared with unbound updates", () => {
    const meter = new Meter()
    const hist = meter.instrument({ name: "t.bound", description: "d", unit: "s", kind: "histogram" }, [1])
    const counter = meter.instrument({ name: "t.count", description: "c", unit: "1", kind: "counter" })
    const bound = hist.bind({ method: "GET", status: 200 })
    bound.record(0.5)
    hist.record(2, { method: "GET", status: "200" })
    bound.record(0.25)
    counter.bind({ result: "ok" }).add(2)
    counter.add(1, { result: "ok" })
    expect(meter.series("t.bound")).toEqual([{ attributes: { method: "GET", status: "200" }, value: 2.75, count: 3 }])
    expect(meter.series("t.count")).toEqual([{ attributes: { result: "ok" }, value: 3, count: 0 }])
    // Prometheus and OTLP read the same registry: the bound updates are in effect's snapshot.
    const snapshot = meter.snapshot().filter((m) => m.id === "t.bound")
    expect(snapshot).toHaveLength(1)
  })
})
