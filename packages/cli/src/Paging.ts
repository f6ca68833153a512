/**
 * Following the cursors of a list (API-CONVENTIONS "Lists"): pages are asked for until the last
 * one (no `cursor`) or until `max` items were seen; the cursor alone carries the filters.
 */
import { Effect } from "effect"
import { maxPageSize } from "@svc/domain/Resource"

/** A list page as the api answers it. */
export interface PageOf<A> {
  readonly items: ReadonlyArray<A>
  readonly cursor?: string | undefined
}

/** How far a listing got. */
export interface PagingProgress {
  readonly pages: number
  readonly items: number
}

/** Options of `followPages`. */
export interface FollowPages<A, E, R> {
  /** One page: the first without a cursor, then with the previous page's cursor. */
  readonly fetch: (cursor: string | undefined, limit: number) => Effect.Effect<PageOf<A>, E, R>
  /** Items to take in all (`undefined`: every item). */
  readonly max: number | undefined
  /** Page size asked for (1–1000); the last page asks only for what is still wanted. */
  readonly pageSize: number
  /** Called with each page's items (cut to `max`) and the totals so far. */
  readonly onPage: (items: ReadonlyArray<A>, progress: PagingProgress) => Effect.Effect<void, E, R>
}

/** Pages through a list; answers the number of pages fetched and items taken. */
export const followPages = Effect.fnUntraced(function* <A, E, R>(options: FollowPages<A, E, R>) {
  const pageSize = Math.min(maxPageSize, Math.max(1, Math.floor(options.pageSize)))
  let cursor: string | undefined
  let pages = 0
  let items = 0
  while (true) {
    const wanted = options.max === undefined ? pageSize : Math.min(pageSize, options.max - items)
    if (wanted <= 0) break
    const page = yield* options.fetch(cursor, wanted)
    pages += 1
    const taken = page.items.slice(0, wanted)
    items += taken.length
    yield* options.onPage(taken, { pages, items })
    cursor = page.cursor
    if (cursor === undefined || page.items.length === 0) break
  }
  return { pages, items } satisfies PagingProgress
})
