import { describe, expect, it } from "vitest"
import { McpSessionTable } from "./McpSessions.ts"

describe("McpSessionTable", () => {
  it("expires sessions idle longer than the timeout, never one with a request in flight", () => {
    const table = new McpSessionTable({ idleTimeoutMs: 1000, maxSessions: 10 })
    table.open("a", "actor", 0)
    table.open("b", "actor", 0)
    table.open("c", "actor", 500)
    expect(table.begin("b", "actor", 600)).toBe("ok") // b in flight from 600
    expect(table.expire(1000)).toEqual([])
    expect(table.expire(1001)).toEqual(["a"])
    // b has been in flight for longer than the timeout: kept until answered, unlike c.
    expect(table.expire(2000)).toEqual(["c"])
    table.end("b", 2100)
    expect(table.expire(3100)).toEqual([])
    expect(table.expire(3101)).toEqual(["b"])
    expect(table.size).toBe(0)
  })

  it("evicts the least recently used session beyond the cap, an idle one first", () => {
    const table = new McpSessionTable({ idleTimeoutMs: 60_000, maxSessions: 2 })
    expect(table.open("a", "actor", 0)).toEqual([])
    expect(table.open("b", "actor", 1)).toEqual([])
    expect(table.begin("a", "actor", 2)).toBe("ok")
    table.end("a", 3)
    expect(table.open("c", "actor", 4)).toEqual(["b"])
    // a is in flight: c, although more recent, goes first.
    expect(table.begin("a", "actor", 5)).toBe("ok")
    expect(table.open("d", "actor", 6)).toEqual(["c"])
    expect(table.begin("b", "actor", 7)).toBe("unknown")
  })

  it("a session answers only the actor that opened it; a closed one is unknown", () => {
    const table = new McpSessionTable({ idleTimeoutMs: 60_000, maxSessions: 10 })
    table.open("a", "actor-1", 0)
    expect(table.begin("a", "actor-2", 1)).toBe("foreign")
    expect(table.begin("a", "actor-1", 1)).toBe("ok")
    table.close("a")
    expect(table.begin("a", "actor-1", 2)).toBe("unknown")
  })
})
