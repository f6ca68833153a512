/** The page the OAuth2 popup of the Connect UI's setup lands on (`/connect/oauth-return`). */
import { useEffect } from "preact/hooks"
import { type OAuthReturnMessage, providerError } from "./common.ts"

/** Where the OAuth2 popup lands: hands the outcome to the opener and closes, or links back. */
export const OAuthReturn = () => {
  const params = new URLSearchParams(location.search)
  const message: OAuthReturnMessage = {
    type: "svc:oauth-return",
    connectionId: params.get("connection_id"),
    status: params.get("status"),
    error: params.get("error")
  }
  const opener = window.opener as Window | null
  useEffect(() => {
    if (opener !== null) {
      opener.postMessage(message, location.origin)
      window.close()
    }
  }, [])
  return (
    <main>
      <div class="svc-card">
        <h1>{message.error === null ? "Signed in" : "Sign-in did not complete"}</h1>
        <p>{message.error === null ? "You can close this window." : providerError(message.error)}</p>
        <a href="/connect/">Back to your connections</a>
      </div>
    </main>
  )
}
