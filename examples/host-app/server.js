// A sample host application (docs/ui.md, README "Connect your first tenant"): it signs a
// marketplace login URL for its signed-in user and embeds svc's Connect UI in an iframe; the
// Connect UI reports each finished connection back with postMessage.
//
//   node examples/host-app/server.js          (npm run example:host-app)
//
// Environment: SVC_PUBLIC_URL (default http://127.0.0.1:8080), SVC_SIGNING_KEY (the RS256
// private key svc trusts, default .svc/dev-keys/jwt-private.pem), HOST_APP_USER (the svc actor's
// externalId, default acme-user), PORT (default 3000; 0 picks a free one).
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { importPKCS8, SignJWT } from "jose"

const svcUrl = (process.env.SVC_PUBLIC_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "")
const keyFile = process.env.SVC_SIGNING_KEY ?? ".svc/dev-keys/jwt-private.pem"
const user = process.env.HOST_APP_USER ?? "acme-user"

// A login URL works once and for at most 15 minutes: sign a fresh one for every page view.
const loginUrl = async (hostOrigin) => {
  const key = await importPKCS8(readFileSync(keyFile, "utf8"), "RS256")
  const token = await new SignJWT({ nonce: randomUUID() })
    .setProtectedHeader({ alg: "RS256" })
    .setSubject(user)
    .setAudience(["public"])
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(key)
  const returnTo = `${svcUrl}/connect/?host_origin=${encodeURIComponent(hostOrigin)}`
  return `${svcUrl}/marketplace/login?token=${token}&return_to=${encodeURIComponent(returnTo)}`
}

const escapeHtml = (s) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)

// The page's script: shows what the Connect UI reports, trusting only svc's origin. It runs in
// <head>, before the iframe exists: the Connect UI may post as soon as it loads (an error page
// does at once), and a listener added after that would miss the message.
const script = `const svc = ${JSON.stringify(new URL(svcUrl).origin)}
const received = []
const show = () => {
  const events = document.getElementById("events")
  if (events !== null) events.textContent = received.map((data) => JSON.stringify(data) + "\\n").join("")
}
window.addEventListener("message", (event) => {
  if (event.origin !== svc) return
  received.push(event.data)
  show()
})
document.addEventListener("DOMContentLoaded", show)`

const server = createServer(async (req, res) => {
  if (req.url === "/app.js") {
    res.writeHead(200, { "content-type": "text/javascript" }).end(script)
    return
  }
  const origin = `http://${req.headers.host}`
  const src = await loginUrl(origin)
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme app</title><link rel="icon" href="data:,"><script src="/app.js"></script></head>
<body><h1>Acme app: connect your accounts</h1>
<iframe id="svc-connect" title="Connect your accounts" src="${escapeHtml(src)}" width="900" height="620"></iframe>
<h2>Events from svc</h2><pre id="events"></pre></body></html>`)
})

server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`host app for ${user} on http://127.0.0.1:${server.address().port}`)
})
