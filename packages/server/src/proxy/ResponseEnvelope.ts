/**
 * The `_proxy` answer envelope (API-CONVENTIONS "Proxy"): the upstream status and headers, and
 * the body as `bodyJson` when the upstream declared JSON and it parses, else as base64 `bodyRaw`;
 * neither for an empty body. Pure.
 */
import type { ProxyResponse } from "@svc/domain/Proxy"
import type { OutboundResponse } from "../outbound/Outbound.ts"

const jsonType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

const firstValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/** The envelope of one buffered answer (the upstream's, or svc's own). */
export const responseEnvelope = (response: Pick<OutboundResponse, "status" | "headers" | "body">): ProxyResponse => {
  const base = { statusCode: response.status, headers: response.headers }
  if (response.body.byteLength === 0) return base
  const contentType = firstValue(response.headers["content-type"])
  if (contentType !== undefined && jsonType.test(contentType)) {
    try {
      return { ...base, bodyJson: JSON.parse(Buffer.from(response.body).toString("utf8")) }
    } catch {
      // Declared JSON that does not parse is returned as bytes.
    }
  }
  return { ...base, bodyRaw: Buffer.from(response.body).toString("base64") }
}
