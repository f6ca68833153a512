import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { makeDrain } from "./ServerDrain.ts"

const listen = (server: http.Server) =>
  Effect.promise(
    () =>
      new Promise<number>((resolve) =>
        server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
      )
  )

describe("ServerDrain", () => {
  it.live("is shutting down from the start of the delay, serves through it, then closes the listener", () =>
    Effect.gen(function* () {
      const drain = makeDrain(1_000, 400)
      const server = drain.track(http.createServer((_req, res) => res.end("served")))
      const port = yield* listen(server)
      assert.isFalse(drain.shuttingDown())
      const draining = yield* Effect.forkChild(drain.drain)
      yield* Effect.yieldNow
      assert.isTrue(drain.shuttingDown())
      // Still serving during the delay.
      const answer = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/`).then((r) => r.text()))
      assert.strictEqual(answer, "served")
      assert.isTrue(server.listening)
      yield* Fiber.join(draining)
      assert.isFalse(server.listening)
      assert.isTrue(drain.shuttingDown())
    })
  )

  it.live("without a delay, closes the listener at once", () =>
    Effect.gen(function* () {
      const drain = makeDrain(1_000)
      const server = drain.track(http.createServer((_req, res) => res.end("served")))
      yield* listen(server)
      yield* drain.drain
      assert.isFalse(server.listening)
      assert.isTrue(drain.shuttingDown())
    })
  )
})
