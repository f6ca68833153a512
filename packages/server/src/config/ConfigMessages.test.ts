import { describe, expect, it } from "vitest"
import { closestKey, editDistance, envSourceOf, withEnvSource } from "./ConfigMessages.ts"

describe("config messages", () => {
  it("edit distance counts a swap of neighbours as one edit", () => {
    expect(editDistance("port", "port")).toBe(0)
    expect(editDistance("prot", "port")).toBe(1)
    expect(editDistance("databse", "database")).toBe(1)
    expect(editDistance("", "api")).toBe(3)
    expect(editDistance("kitten", "sitting")).toBe(3)
  })

  it("did-you-mean takes the closest key within a third of its letters, case ignored", () => {
    const keys = ["api", "admin_api", "public", "worker", "database", "counter_store"]
    expect(closestKey("API", keys)).toBe("api")
    expect(closestKey("databse", keys)).toBe("database")
    expect(closestKey("countr_store", keys)).toBe("counter_store")
    expect(closestKey("wroker", keys)).toBe("worker")
    expect(closestKey("redis", keys)).toBeUndefined()
    expect(closestKey("zzz", keys)).toBeUndefined()
  })

  it("a problem names the variable that set its key, a parent or a child of it", () => {
    const sources = new Map([
      ["api.port", "SVC__api__port"],
      ["system_auth.actors", "SVC__system_auth__actors"],
      ["databse.provider", "SVC__databse__provider"]
    ])
    expect(envSourceOf("api.port", sources)).toBe("SVC__api__port")
    expect(envSourceOf("system_auth.actors[0].permissions", sources)).toBe("SVC__system_auth__actors")
    expect(envSourceOf("databse", sources)).toBe("SVC__databse__provider")
    expect(envSourceOf("api.host", sources)).toBeUndefined()
    expect(withEnvSource("api.port: expected an integer", sources)).toBe(
      "api.port: expected an integer (set by SVC__api__port)"
    )
    expect(withEnvSource("api.host: must not be empty", sources)).toBe("api.host: must not be empty")
    expect(withEnvSource("file not found", sources)).toBe("file not found")
  })
})
