/**
 * The per-connection outbound concurrency cap (connector `proxy.max_concurrent_requests`,
 * SECURITY.md "Limits on every input"): at most `limit` requests of one connection are upstream
 * at a time in this process; more wait in arrival order for at most `waitMs`, then are refused.
 * Plain synchronous bookkeeping: no fiber or timer per admitted request.
 */

interface Waiter {
  readonly admit: () => void
  readonly timer: ReturnType<typeof setTimeout>
}

interface Slot {
  active: number
  readonly waiting: Array<Waiter>
}

/** A release function, called exactly once when the request is over. */
export type Release = () => void

/** Per-key counting gates. */
export class ConnectionGate {
  private readonly slots = new Map<string, Slot>()

  /**
   * Admits a request of `key` at once when fewer than `limit` are active (the release), or
   * queues it: the promise resolves with the release when a slot frees, or with `undefined` after
   * `waitMs` without one.
   */
  enter(key: string, limit: number, waitMs: number): Release | Promise<Release | undefined> {
    let slot = this.slots.get(key)
    if (slot === undefined) {
      slot = { active: 0, waiting: [] }
      this.slots.set(key, slot)
    }
    if (slot.active < limit) {
      slot.active++
      return this.releaser(key, slot)
    }
    const current = slot
    return new Promise((resolve) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(waiter.timer)
          resolve(this.releaser(key, current))
        },
        timer: setTimeout(() => {
          const index = current.waiting.indexOf(waiter)
          if (index !== -1) current.waiting.splice(index, 1)
          this.forget(key, current)
          resolve(undefined)
        }, waitMs)
      }
      current.waiting.push(waiter)
    })
  }

  /** Requests of `key` now upstream. */
  active(key: string): number {
    return this.slots.get(key)?.active ?? 0
  }

  private releaser(key: string, slot: Slot): Release {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = slot.waiting.shift()
      if (next !== undefined) {
        next.admit()
        return
      }
      slot.active--
      this.forget(key, slot)
    }
  }

  private forget(key: string, slot: Slot): void {
    if (slot.active === 0 && slot.waiting.length === 0 && this.slots.get(key) === slot) this.slots.delete(key)
  }
}
