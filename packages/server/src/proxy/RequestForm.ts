/**
 * One form of each proxied request and answer (SECURITY.md "One path form", "An upstream cannot
 * speak for svc"; docs/proxy.md "Security model"), applied by the exchange for both routes and
 * both doors: the path normalised and the method upper-cased before any stage sees them, and an
 * upstream's `X-Svc-*` headers dropped before the answer is relayed. Pure.
 */
import type { AnswerHead, CallerRequest } from "./Route.ts"

/** RFC 3986 2.3 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
const isUnreserved = (code: number) =>
  (code >= 0x41 && code <= 0x5a) ||
  (code >= 0x61 && code <= 0x7a) ||
  (code >= 0x30 && code <= 0x39) ||
  code === 0x2d ||
  code === 0x2e ||
  code === 0x5f ||
  code === 0x7e

const percentEncoded = /%[0-9A-Fa-f]{2}/g

/**
 * Stage: one path form (SECURITY.md "One path form"; docs/proxy.md): percent-encoded unreserved
 * characters decoded and the hex digits of every other escape upper-cased (RFC 3986 6.2.2.1-2),
 * then dot segments removed (the URL parser does it), in place on `url`, so the rules, the event,
 * the telemetry and the upstream all see the same path. `//` and `%2F` stay as they are.
 */
export const normalisePath = (url: URL): void => {
  const path = url.pathname
  if (!path.includes("%")) return
  const normal = path.replace(percentEncoded, (encoded) => {
    const code = Number.parseInt(encoded.slice(1), 16)
    return isUnreserved(code) ? String.fromCharCode(code) : encoded.toUpperCase()
  })
  if (normal !== path) url.pathname = normal
}

/** Stage: one method form, upper case (`_proxy` takes the method as the caller wrote it). */
export const upperMethod = <R extends CallerRequest>(request: R): R => {
  const method = request.method.toUpperCase()
  return method === request.method ? request : { ...request, method }
}

/**
 * An upstream's answer without `X-Svc-*` headers (SECURITY.md "An upstream cannot speak for svc"):
 * a forged `X-Svc-Ratelimited` never reaches the caller, raw or in an envelope.
 */
export const withoutSvcHeaders = <U extends AnswerHead>(answer: U): U => {
  let forged = false
  for (const name in answer.headers) {
    if (name.length > 6 && name.toLowerCase().startsWith("x-svc-")) {
      forged = true
      break
    }
  }
  if (!forged) return answer
  const headers: Record<string, string | ReadonlyArray<string>> = {}
  for (const [name, value] of Object.entries(answer.headers)) {
    if (!name.toLowerCase().startsWith("x-svc-")) headers[name] = value
  }
  return { ...answer, headers }
}
