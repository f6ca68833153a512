/**
 * In-process notice that a connection row changed (ARCHITECTURE "request path": caches are
 * invalidated on write). Writers call `changed`; caches register with `onChange`. Other processes
 * learn of a change when their cache entry expires.
 */
import { Context, Layer } from "effect"

export class ConnectionChanges extends Context.Service<
  ConnectionChanges,
  {
    /** Tells every listener that connection `id` was written. */
    readonly changed: (id: string) => void
    /** Registers a listener for the life of the process. */
    readonly onChange: (listener: (id: string) => void) => void
  }
>()("@svc/server/ConnectionChanges") {
  static readonly layer: Layer.Layer<ConnectionChanges> = Layer.sync(ConnectionChanges, () => {
    const listeners: Array<(id: string) => void> = []
    return ConnectionChanges.of({
      changed: (id) => {
        for (const listener of listeners) listener(id)
      },
      onChange: (listener) => {
        listeners.push(listener)
      }
    })
  })
}
