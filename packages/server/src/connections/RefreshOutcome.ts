/** How a token refresh flight ended (`TokenRefresher.ts`), and what `refreshNow` answers. */
import type { RefreshFailureReason } from "../oauth/Refresh.ts"
import type { OAuth2Credentials } from "./UsableCredentials.ts"

/** How one refresh flight ended. */
export type RefreshOutcome =
  /** New credentials are stored: refreshed by this flight (`self`) or found refreshed by someone else. */
  | { readonly _tag: "Fresh"; readonly by: "self" | "other"; readonly credentials: OAuth2Credentials }
  /** The refresh failed (now, or recently for these same credentials); the stored credentials if known. */
  | {
      readonly _tag: "Failed"
      readonly reason: RefreshFailureReason
      readonly credentials: OAuth2Credentials | undefined
    }
  /** Another process held the lease for its whole life without storing anything. */
  | { readonly _tag: "Unchanged"; readonly credentials: OAuth2Credentials }
  /** The connection is deleted or no longer holds OAuth2 credentials. */
  | { readonly _tag: "Gone" }

/** What `refreshNow` did. */
export type RefreshNowResult = "refreshed" | "failed" | "skipped"

export const fresh = (by: "self" | "other", credentials: OAuth2Credentials): RefreshOutcome => ({
  _tag: "Fresh",
  by,
  credentials
})

export const gone: RefreshOutcome = { _tag: "Gone" }
