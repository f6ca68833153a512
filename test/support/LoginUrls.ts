/**
 * Signed login URLs for the browser tests, made as a host application makes them: an RS256 actor
 * token from the development key of a running svc, with an audience, a single-use nonce and a
 * five-minute life (marketplace: `public`, `/marketplace/login`; admin UI: `admin-api`, `/ui/login`).
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { importPKCS8, SignJWT } from "jose"
import type { Svc } from "./Api.ts"

/**
 * A login token for `externalId` valid on `service`, signed with the svc's development key
 * (`nonce: false` leaves the nonce out; `expiredSecondsAgo` makes one that expired that long ago).
 */
export const loginToken = async (
  svc: Svc,
  externalId: string,
  service: "public" | "admin-api",
  options: { readonly nonce?: boolean; readonly expiredSecondsAgo?: number } = {}
): Promise<string> => {
  const pem = await fs.readFile(path.join(svc.dir ?? "", ".svc/dev-keys/jwt-private.pem"), "utf8")
  const now = Math.floor(Date.now() / 1000)
  const ago = options.expiredSecondsAgo
  return new SignJWT(options.nonce === false ? {} : { nonce: randomUUID() })
    .setProtectedHeader({ alg: "RS256" })
    .setSubject(externalId)
    .setAudience([service])
    .setIssuedAt(ago === undefined ? now : now - ago - 60)
    .setExpirationTime(ago === undefined ? now + 300 : now - ago)
    .setJti(randomUUID())
    .sign(await importPKCS8(pem, "RS256"))
}

/** `<public>/marketplace/login?token=…&return_to=…`. */
export const marketplaceLoginUrl = async (
  svc: Svc,
  externalId: string,
  returnTo: string,
  options: { readonly expiredSecondsAgo?: number } = {}
): Promise<string> =>
  `http://127.0.0.1:${svc.ports.public}/marketplace/login?token=${await loginToken(svc, externalId, "public", options)}` +
  `&return_to=${encodeURIComponent(returnTo)}`

/** `<admin-api>/ui/login?token=…`. */
export const adminLoginUrl = async (svc: Svc, externalId: string): Promise<string> =>
  `https://127.0.0.1:${svc.ports.adminApi}/ui/login?token=${await loginToken(svc, externalId, "admin-api")}`
