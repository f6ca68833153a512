/**
 * Notice that a connection row changed (ARCHITECTURE "request path": caches are invalidated on
 * write). Writers call `changed` (this process at once, other processes in the background) or
 * `written` (this process at once, and every other process before it returns: a disconnect, a
 * credential rotation, a deletion, a label rewrite); caches register with `onChange`, and with
 * `onLost` for when other processes' notices may have been missed (`ChangeFeed`).
 */
import { Context, Effect, Layer } from "effect"
import { ChangeFeed } from "../stores/ChangeFeed.ts"

export class ConnectionChanges extends Context.Service<
  ConnectionChanges,
  {
    /** Tells every listener that connection `id` was written; other processes are told in the background. */
    readonly changed: (id: string) => void
    /**
     * Tells every listener of this process that connections `ids` were written, then publishes it to
     * every other process; returns once published (bounded; a failure is logged, never raised).
     */
    readonly written: (ids: ReadonlyArray<string>) => Effect.Effect<void>
    /** Registers a listener for the life of the process. */
    readonly onChange: (listener: (id: string) => void) => void
    /** Registers what to do when notices may have been lost (forget every cached connection). */
    readonly onLost: (listener: () => void) => void
    /** Whether other processes' notices currently arrive; while not, caches keep entries only briefly. */
    readonly live: () => boolean
  }
>()("@svc/server/ConnectionChanges") {
  /** Over the process's `ChangeFeed` (Redis pub/sub in production, in-process on the embedded default). */
  static readonly layerNoDeps: Layer.Layer<ConnectionChanges, never, ChangeFeed> = Layer.effect(
    ConnectionChanges,
    Effect.gen(function* () {
      const feed = yield* ChangeFeed
      const run = Effect.runForkWith(yield* Effect.context<never>())
      const listeners: Array<(id: string) => void> = []
      const lostListeners: Array<() => void> = []
      const local = (id: string) => {
        for (const listener of listeners) listener(id)
      }
      feed.listen({
        changed: (ids) => {
          for (const id of ids) local(id)
        },
        lost: () => {
          for (const listener of lostListeners) listener()
        }
      })
      return ConnectionChanges.of({
        changed: (id) => {
          local(id)
          run(feed.publish([id]))
        },
        written: (ids) =>
          Effect.suspend(() => {
            for (const id of ids) local(id)
            return feed.publish(ids)
          }),
        onChange: (listener) => {
          listeners.push(listener)
        },
        onLost: (listener) => {
          lostListeners.push(listener)
        },
        live: feed.live
      })
    })
  )

  /** In-process only (tests, and processes whose changes need not leave them). */
  static readonly layer: Layer.Layer<ConnectionChanges> = ConnectionChanges.layerNoDeps.pipe(
    Layer.provide(ChangeFeed.layerLocal)
  )
}
