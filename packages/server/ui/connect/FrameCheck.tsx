/**
 * The frame check (docs/ui.md "When the page cannot open"): svc answers a framed marketplace login
 * for the Connect UI with this page when the framing page sent no Referer, because the Connect UI
 * itself may only be framed by an allowed origin and a refused frame stays blank. Any page may
 * frame this one (it reads no session and sends nothing anywhere): it asks the browser for the
 * frame's ancestor origin (`location.ancestorOrigins`, Chromium and Safari) and loads the same
 * login URL again with `frame_origin` set to it, or empty when the browser does not tell. svc then
 * signs in, or shows the error page to the framing page. The login URL's token is not read here.
 */
import { useEffect } from "preact/hooks"

/** The query parameter svc reads (MarketplaceRoutes.ts `frameOriginParam`). */
const frameOriginParam = "frame_origin"

/** The origin of the page framing this one, as the browser reports it; empty when it does not. */
const ancestorOrigin = (): string => (window.parent !== window ? location.ancestorOrigins?.[0] : undefined) ?? ""

export const FrameCheck = () => {
  useEffect(() => {
    const url = new URL(location.href)
    url.searchParams.set(frameOriginParam, ancestorOrigin())
    location.replace(url.href)
  }, [])
  return (
    <main>
      <p role="status">Loading…</p>
    </main>
  )
}
