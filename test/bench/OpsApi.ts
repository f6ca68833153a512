/**
 * The api of a production-mode bench cluster, called as the `ops` system actor (an HS256 token
 * signed with the cluster's `secret`): `call` answers the status and the parsed body, `expect`
 * throws with the body's start unless the status is the one expected.
 */
import { SignJWT } from "jose"

export interface Answer<T> {
  readonly status: number
  readonly body: T
}

export const opsApi = async (origin: string, secret: Uint8Array, timeoutMs: number) => {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("ops")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(secret)
  const call = async <T>(method: string, urlPath: string, body?: unknown): Promise<Answer<T>> => {
    const response = await fetch(`${origin}${urlPath}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs)
    })
    const text = await response.text()
    return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as T }
  }
  const expect = async <T>(answer: Promise<Answer<T>>, status: number, what: string): Promise<T> => {
    const got = await answer
    if (got.status !== status) throw new Error(`${what}: ${got.status} ${JSON.stringify(got.body).slice(0, 300)}`)
    return got.body
  }
  return { call, expect }
}
