/**
 * nginx (Debian package `nginx`) as a reference proxy: started as a child of the bench, never the
 * system service, with a generated config in a private temp dir (its own pid file, error log and
 * temp paths; `daemon off`, `master_process off`, so one process that SIGKILL ends), listening on
 * a free 127.0.0.1 port and `proxy_pass`ing to the upstream over a keep-alive pool with the
 * `Authorization` header injected and buffering off both ways (bodies and SSE stream through).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort, tempDir } from "../support/SvcProcess.ts"
import { trackChild, trackDir } from "./Children.ts"
import type { NodeChild } from "./Ready.ts"
import { stopper, waitFor200 } from "./Ready.ts"

/** The nginx executable: on PATH, or in the sbin dirs a non-root PATH often lacks. */
export const nginxBinary = (): string | undefined => {
  const dirs = [
    ...(process.env.PATH ?? "").split(path.delimiter),
    "/usr/sbin",
    "/usr/local/sbin",
    "/usr/local/nginx/sbin"
  ]
  for (const dir of dirs) {
    if (dir === "") continue
    const file = path.join(dir, "nginx")
    try {
      fs.accessSync(file, fs.constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

/** The config: everything under `dir`; the key only in this file (mode 0600, dir removed on exit). */
const config = (dir: string, port: number, upstream: URL, apiKey: string): string => `
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events {
  worker_connections 4096;
}
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_timeout 65s;
  keepalive_requests 10000000;
  upstream bench_upstream {
    server ${upstream.host};
    keepalive 256;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer ${apiKey}";
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_read_timeout 120s;
      proxy_send_timeout 120s;
    }
  }
}
`

/** Starts nginx in front of `upstreamOrigin`, awaited until `/ping` through it answers 200. */
export const startNginx = async (binary: string, upstreamOrigin: string, apiKey: string): Promise<NodeChild> => {
  if (!/^[A-Za-z0-9._~-]+$/.test(apiKey)) throw new Error("nginx: the api key must be a plain token")
  const dir = await tempDir("svc-bench-nginx-")
  trackDir(dir)
  const port = await freePort()
  const conf = path.join(dir, "nginx.conf")
  const errorLog = path.join(dir, "error.log")
  fs.writeFileSync(conf, config(dir, port, new URL(upstreamOrigin), apiKey), { mode: 0o600 })
  const child = spawn(binary, ["-p", `${dir}/`, "-c", conf, "-e", errorLog], { stdio: ["ignore", "pipe", "pipe"] })
  trackChild(child)
  let output = ""
  const collect = (chunk: Buffer) => {
    output += chunk.toString("utf8")
  }
  child.stdout.on("data", collect)
  child.stderr.on("data", collect)
  const stop = stopper(child)
  const describe = () => {
    const log = fs.existsSync(errorLog) ? fs.readFileSync(errorLog, "utf8") : ""
    return `${output}${log}`.trim().slice(-1000)
  }
  await waitFor200(`http://127.0.0.1:${port}/ping`, child, describe, 15_000)
  return { port, pid: child.pid, stop }
}
