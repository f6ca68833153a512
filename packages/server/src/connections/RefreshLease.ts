/**
 * Cross-process coordination of OAuth2 token refreshes (spec 8.3 single flight) through the shared
 * counter store: a lease per connection (`SET NX PX`, a random owner) so that one process at a
 * time calls the provider, and a short memory of a failed refresh so a burst of requests or 401s
 * does not hammer a failing provider. Keys and values hold connection ids, reasons and a hash of
 * the credentials ciphertext, never a secret. A store outage never blocks a refresh: it is logged
 * and the caller refreshes without the lease (the compare-and-swap keeps the row consistent).
 */
import { createHash, randomUUID } from "node:crypto"
import { Effect, Option, Schema } from "effect"
import { RefreshFailureReason } from "../oauth/Refresh.ts"
import type { CounterStore } from "../stores/CounterStore.ts"

/** How long a lease lives; the holder's provider call is bounded well below it. */
export const leaseTtlMs = 30_000

/** How long a transient failure is remembered; a permanent one (re-authentication needed) longer. */
export const transientFailureMemoryMs = 30_000
export const permanentFailureMemoryMs = 10 * 60_000

/** Counter-store key of the refresh lease of connection `id`. */
export const leaseKey = (id: string): string => `oauth2:refresh:${id}`

/** Counter-store key of the remembered refresh failure of connection `id`. */
export const failureKey = (id: string): string => `oauth2:refresh-failure:${id}`

/** A short, non-reversible name of a credentials ciphertext: a failure applies to these credentials only. */
export const fingerprint = (sealed: string): string => createHash("sha256").update(sealed).digest("hex").slice(0, 32)

/** What taking the lease gave: held by us, held by another process, or no store to ask. */
export type LeaseState = "held" | "busy" | "unavailable"

const isReason = Schema.is(RefreshFailureReason)

/** The lease and failure-memory operations over one counter store. */
export const makeRefreshLease = (counters: CounterStore["Service"]) => {
  const unavailable = (what: string, id: string) =>
    Effect.logWarning(
      `counter store unavailable (${what}); connection ${id} refreshes without cross-process coordination`
    )

  return {
    /** A fresh random owner value for one holder. */
    owner: (): string => randomUUID(),

    /** Tries to take the lease of connection `id` for `owner`. */
    take: (id: string, owner: string): Effect.Effect<LeaseState> =>
      counters.setIfAbsent(leaseKey(id), owner, leaseTtlMs).pipe(
        Effect.map((stored): LeaseState => (stored ? "held" : "busy")),
        Effect.catch(() => Effect.as(unavailable("lease", id), "unavailable" as const))
      ),

    /** Whether someone holds the lease of connection `id` (an unreachable store counts as free). */
    isHeld: (id: string): Effect.Effect<boolean> =>
      counters.get(leaseKey(id)).pipe(
        Effect.map(Option.isSome),
        Effect.catch(() => Effect.succeed(false))
      ),

    /**
     * Releases the lease if `owner` still holds it. The store has no compare-and-delete: between the
     * read and the delete the lease could expire and be taken by another process, whose lease this
     * would then remove. The holder's work is bounded far below `leaseTtlMs`, so that needs a stall
     * of tens of seconds; its only effect would be one extra provider call, never a lost update.
     */
    release: (id: string, owner: string): Effect.Effect<void> =>
      counters.get(leaseKey(id)).pipe(
        Effect.flatMap((value) =>
          Option.isSome(value) && value.value === owner ? Effect.asVoid(counters.delete(leaseKey(id))) : Effect.void
        ),
        Effect.ignore
      ),

    /** The reason of a failed refresh of exactly these credentials (`sealed`) still remembered, if any. */
    recall: (id: string, sealed: string): Effect.Effect<RefreshFailureReason | undefined> =>
      counters.get(failureKey(id)).pipe(
        Effect.map((value) => {
          if (Option.isNone(value)) return undefined
          const [print, reason] = value.value.split(" ")
          return print === fingerprint(sealed) && isReason(reason) ? reason : undefined
        }),
        Effect.catch(() => Effect.succeed(undefined))
      ),

    /** Remembers that refreshing these credentials failed with `reason`, for `ttlMs`. */
    remember: (id: string, sealed: string, reason: RefreshFailureReason, ttlMs: number): Effect.Effect<void> =>
      counters.delete(failureKey(id)).pipe(
        Effect.andThen(counters.setIfAbsent(failureKey(id), `${fingerprint(sealed)} ${reason}`, ttlMs)),
        Effect.catch(() => unavailable("failure memory", id)),
        Effect.asVoid
      ),

    /** Forgets a remembered failure (after a success). */
    forget: (id: string): Effect.Effect<void> => Effect.ignore(counters.delete(failureKey(id)))
  }
}

/** The operations `makeRefreshLease` returns. */
export type RefreshLease = ReturnType<typeof makeRefreshLease>
