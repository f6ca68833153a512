// HEALTHCHECK of the image: healthy when a listener of this container answers GET /livez with 200.
// SVC_HEALTHCHECK_URL names the one to ask; else the default ports are tried (api, public, worker
// over HTTP, admin-api over HTTPS with its possibly self-signed certificate).
import { request as http } from "node:http"
import { request as https } from "node:https"

const urls = process.env.SVC_HEALTHCHECK_URL
  ? [process.env.SVC_HEALTHCHECK_URL]
  : [
      "http://127.0.0.1:8081/livez",
      "http://127.0.0.1:8080/livez",
      "http://127.0.0.1:8083/livez",
      "https://127.0.0.1:8082/livez"
    ]
const ask = (url) =>
  new Promise((resolve) => {
    const get = url.startsWith("https:") ? https : http
    const req = get(url, { timeout: 3000, rejectUnauthorized: false }, (res) => {
      res.resume()
      resolve(res.statusCode)
    })
    req.on("timeout", () => req.destroy())
    req.on("error", () => resolve(0))
    req.end()
  })
const codes = await Promise.all(urls.map(ask))
process.exit(codes.includes(200) && !codes.includes(503) ? 0 : 1)
