/**
 * The Kubernetes manifests (deploy/kubernetes, docs/deployment.md) render and hold together:
 *
 * - every overlay renders with `kubectl kustomize` (the dev overlay after its own
 *   `make-secrets.sh`, in a copy of deploy/);
 * - every object validates against the Kubernetes OpenAPI schemas (kubernetes-models, and the
 *   prometheus-operator models for the ServiceMonitor);
 * - references resolve: Secrets, ConfigMaps, HPA targets, Service and PDB selectors, probe and
 *   ServiceMonitor ports;
 * - the ConfigMap's svc.yaml loads with svc's own loader under each container's environment
 *   (secrets and downward-API values filled in), and `svc config check` accepts it;
 * - the dev runner certificate names every worker's advertised host.
 */
import { loadConfig } from "@svc/server/config/ConfigLoader"
import { Effect, Exit } from "effect"
import { execFile } from "node:child_process"
import { X509Certificate } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { checkServerIdentity } from "node:tls"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseAllDocuments } from "yaml"
import { repoRoot, svcMain } from "../support/SvcProcess.ts"

const run = promisify(execFile)
const kubectl = "/usr/bin/kubectl"
const overlays = ["dev", "production"] as const
type Overlay = (typeof overlays)[number]

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects are untyped YAML
type K8sObject = any

/** The Secrets the base reads, with their keys: made by make-secrets.sh (dev) or by hand (docs/deployment.md). */
const secretKeys: Record<string, ReadonlyArray<string>> = {
  "svc-stores": ["database-url", "redis-url"],
  "svc-root-key": ["root-key"],
  "svc-jwt": ["jwt-public.pem"],
  "svc-runner-tls": ["ca.pem", "runner.pem", "runner-key.pem"],
  "svc-admin-api-tls": ["tls.crt", "tls.key"]
}

/** Stand-ins for production secrets: the shape svc parses, no real value. */
const productionSecretValues: Record<string, string> = {
  "database-url": "postgres://svc:pw@db.internal:5432/svc?sslmode=verify-full",
  "redis-url": "rediss://:pw@redis.internal:6380/0",
  "root-key": Buffer.alloc(32, 7).toString("base64")
}

let work = ""
const rendered = new Map<Overlay, ReadonlyArray<K8sObject>>()

const render = async (dir: string): Promise<ReadonlyArray<K8sObject>> => {
  const { stdout } = await run(kubectl, ["kustomize", dir], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 })
  return parseAllDocuments(stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`kubectl kustomize ${dir}: ${doc.errors[0]?.message}`)
      return doc.toJS() as K8sObject
    })
    .filter((o) => o !== null)
}

beforeAll(async () => {
  work = await fs.promises.mkdtemp(path.join(os.tmpdir(), "svc-kustomize-"))
  await fs.promises.cp(path.join(repoRoot, "deploy"), path.join(work, "deploy"), {
    recursive: true,
    filter: (src) => !src.split(path.sep).includes("secrets")
  })
  await run("bash", [path.join(work, "deploy/kubernetes/overlays/dev/make-secrets.sh")], {
    timeout: 90_000,
    env: { PATH: process.env.PATH ?? "", SVC_REPO: repoRoot, NODE: process.execPath }
  })
  for (const overlay of overlays) {
    rendered.set(overlay, await render(path.join(work, "deploy/kubernetes/overlays", overlay)))
  }
}, 180_000)

afterAll(async () => {
  if (work !== "") await fs.promises.rm(work, { recursive: true, force: true })
})

const objects = (overlay: Overlay) => rendered.get(overlay) ?? []
const ofKind = (overlay: Overlay, kind: string) => objects(overlay).filter((o) => o.kind === kind)
const svcWorkloads = (overlay: Overlay) =>
  objects(overlay).filter(
    (o) =>
      ["Deployment", "StatefulSet", "Job"].includes(o.kind) &&
      o.metadata.labels?.["app.kubernetes.io/part-of"] === "svc"
  )

/** The model class of an object's apiVersion and kind; an unknown kind fails (add its models). */
const modelOf = async (o: K8sObject) => {
  const [group, version] = String(o.apiVersion).includes("/") ? String(o.apiVersion).split("/") : ["", o.apiVersion]
  const module =
    group === "monitoring.coreos.com"
      ? await import(`@kubernetes-models/prometheus-operator/${group}/${version}`)
      : await import(group === "" ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`)
  const model = module[o.kind]
  if (model === undefined) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`)
  return model as new (
    data: unknown
  ) => { validate(): void }
}

const validate = async (o: K8sObject) => {
  const Model = await modelOf(o)
  const copy = structuredClone(o)
  // kustomize wraps the base64 of a kubernetes.io/tls Secret over lines, which the API server's
  // decoder (Go's base64, which skips newlines) accepts and the schema's "byte" format does not.
  if (copy.kind === "Secret" && copy.data !== undefined) {
    for (const key of Object.keys(copy.data)) copy.data[key] = String(copy.data[key]).replace(/\s+/g, "")
  }
  new Model(copy).validate()
}

/** A container's environment as the kubelet would set it, secrets from the overlay (or stand-ins). */
const containerEnv = (overlay: Overlay, podName: string, container: K8sObject): Record<string, string> => {
  const env: Record<string, string> = {}
  const secrets = new Map<string, K8sObject>(ofKind(overlay, "Secret").map((s) => [s.metadata.name, s]))
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) {
      env[entry.name] = String(entry.value).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name) => env[name] ?? m)
    } else if (entry.valueFrom?.secretKeyRef !== undefined) {
      const { name, key } = entry.valueFrom.secretKeyRef
      const secret = secrets.get(name)
      const value =
        secret === undefined
          ? productionSecretValues[key]
          : Buffer.from(secret.data?.[key] ?? "", "base64").toString("utf8")
      if (value === undefined) throw new Error(`no stand-in for secret key ${key}`)
      env[entry.name] = value
    } else if (entry.valueFrom?.fieldRef !== undefined) {
      const field = entry.valueFrom.fieldRef.fieldPath
      env[entry.name] = field === "metadata.name" ? podName : field === "metadata.namespace" ? "svc-ns" : "10.0.0.7"
    } else {
      throw new Error(`unsupported env source for ${entry.name}`)
    }
  }
  return env
}

/** The svc.yaml of the overlay's ConfigMap, written to a file of its own. */
const configFile = async (overlay: Overlay): Promise<string> => {
  const [configMap] = ofKind(overlay, "ConfigMap").filter((c) => String(c.metadata.name).startsWith("svc-config"))
  expect(configMap?.data?.["svc.yaml"], `${overlay}: the svc-config ConfigMap`).toBeTypeOf("string")
  const dir = path.join(work, `config-${overlay}`)
  await fs.promises.mkdir(dir, { recursive: true })
  const file = path.join(dir, "svc.yaml")
  await fs.promises.writeFile(file, configMap.data["svc.yaml"])
  return file
}

const load = (file: string, env: Record<string, string>) =>
  Effect.runPromiseExit(loadConfig({ configPath: file, cwd: path.dirname(file), env }))

describe.each(overlays)("overlay %s", (overlay) => {
  it("renders the objects of a full deployment", () => {
    const kinds = objects(overlay).map((o) => `${o.kind}/${o.metadata.name}`)
    for (const name of ["svc-api", "svc-admin-api", "svc-public"]) {
      expect(kinds).toContain(`Deployment/${name}`)
      expect(kinds).toContain(`HorizontalPodAutoscaler/${name}`)
      expect(kinds).toContain(`PodDisruptionBudget/${name}`)
      expect(kinds).toContain(`Service/${name}`)
    }
    for (const k of [
      "StatefulSet/svc-worker",
      "PodDisruptionBudget/svc-worker",
      "Service/svc-runners",
      "NetworkPolicy/svc-runner",
      "Job/svc-migrate",
      "ServiceMonitor/svc",
      "ServiceAccount/svc"
    ]) {
      expect(kinds).toContain(k)
    }
  })

  it("validates every object against the Kubernetes OpenAPI schemas", async () => {
    for (const o of objects(overlay)) {
      await expect(validate(o), `${o.kind}/${o.metadata?.name}`).resolves.toBeUndefined()
    }
  })

  it("resolves every reference: secrets, config map, HPA targets, selectors, probe ports", () => {
    const names = (kind: string) => new Set(ofKind(overlay, kind).map((o) => o.metadata.name))
    const secrets = names("Secret")
    const configMaps = names("ConfigMap")
    const pods = objects(overlay)
      .filter((o) => ["Deployment", "StatefulSet", "Job"].includes(o.kind))
      .map((o) => o.spec.template)
    for (const w of svcWorkloads(overlay)) {
      const spec = w.spec.template.spec
      for (const c of spec.containers) {
        const refs = [
          ...(c.env ?? []).flatMap((e: K8sObject) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [])),
          ...(spec.volumes ?? []).flatMap((v: K8sObject) => (v.secret ? [{ name: v.secret.secretName }] : []))
        ]
        for (const ref of refs) {
          const base = String(ref.name).replace(/-[a-z0-9]{10}$/, "")
          expect(Object.keys(secretKeys), `${w.metadata.name}: secret ${ref.name}`).toContain(base)
          if (ref.key !== undefined && ref.name !== "svc-stores") expect(secretKeys[base]).toContain(ref.key)
          // dev generates its Secrets; production expects them in the namespace
          if (overlay === "dev") expect(secrets, `${w.metadata.name}: secret ${ref.name}`).toContain(ref.name)
        }
        for (const v of spec.volumes ?? []) {
          if (v.configMap) expect(configMaps).toContain(v.configMap.name)
        }
        const ports = new Set((c.ports ?? []).map((p: K8sObject) => p.name))
        for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
          if (w.kind === "Job") continue
          const get = c[probe]?.httpGet
          expect(get?.path, `${w.metadata.name} ${probe}`).toBe(probe === "readinessProbe" ? "/readyz" : "/livez")
          expect(ports, `${w.metadata.name} ${probe} port`).toContain(get.port)
        }
        expect(c.resources?.requests?.memory, `${w.metadata.name} memory request`).toBeDefined()
        expect(c.resources?.limits?.memory, `${w.metadata.name} memory limit`).toBeDefined()
        expect(c.securityContext?.readOnlyRootFilesystem).toBe(true)
      }
      if (overlay === "dev") {
        for (const name of Object.keys(secretKeys)) {
          const secret = ofKind(overlay, "Secret").find((s) => String(s.metadata.name).startsWith(`${name}-`))
          for (const key of secretKeys[name] ?? []) expect(secret?.data?.[key], `${name}.${key}`).toBeTypeOf("string")
        }
      }
    }
    const deployments = names("Deployment")
    for (const hpa of ofKind(overlay, "HorizontalPodAutoscaler")) {
      expect(deployments).toContain(hpa.spec.scaleTargetRef.name)
    }
    const matches = (selector: Record<string, string>) =>
      pods.some((t) => Object.entries(selector).every(([k, v]) => t.metadata.labels?.[k] === v))
    for (const s of ofKind(overlay, "Service"))
      expect(matches(s.spec.selector), `Service ${s.metadata.name}`).toBe(true)
    for (const p of ofKind(overlay, "PodDisruptionBudget")) {
      expect(matches(p.spec.selector.matchLabels), `PDB ${p.metadata.name}`).toBe(true)
    }
    const servicePorts = new Set(
      ofKind(overlay, "Service")
        .filter((s) => s.metadata.labels?.["app.kubernetes.io/name"] === "svc")
        .flatMap((s) => s.spec.ports.map((p: K8sObject) => p.name))
    )
    for (const m of ofKind(overlay, "ServiceMonitor")) {
      for (const e of m.spec.endpoints) expect(servicePorts).toContain(e.port)
    }
  })

  it("lets only svc pods reach the runner port, the one the configuration listens on", async () => {
    const file = await configFile(overlay)
    const [policy] = ofKind(overlay, "NetworkPolicy")
    const worker = ofKind(overlay, "StatefulSet").find((s) => s.metadata.name === "svc-worker")
    const runnerPort = worker.spec.template.spec.containers[0].ports.find((p: K8sObject) => p.name === "runner")
    const exit = await load(file, containerEnv(overlay, "svc-worker-0", worker.spec.template.spec.containers[0]))
    if (!Exit.isSuccess(exit)) throw new Error(String(exit.cause))
    expect(runnerPort.containerPort).toBe(exit.value.cluster.runner.port)
    expect(policy.spec.podSelector.matchLabels).toEqual(worker.spec.selector.matchLabels)
    const runnerRule = policy.spec.ingress.find((r: K8sObject) =>
      r.ports.some((p: K8sObject) => p.port === runnerPort.containerPort)
    )
    expect(runnerRule.from).toEqual([{ podSelector: { matchLabels: { "app.kubernetes.io/name": "svc" } } }])
  })

  it("loads the ConfigMap's svc.yaml with svc's loader under every container's environment", async () => {
    const file = await configFile(overlay)
    for (const w of svcWorkloads(overlay)) {
      const podName = w.kind === "StatefulSet" ? `${w.metadata.name}-1` : `${w.metadata.name}-abc12`
      const env = containerEnv(overlay, podName, w.spec.template.spec.containers[0])
      const exit = await load(file, env)
      if (!Exit.isSuccess(exit)) throw new Error(`${w.metadata.name}: ${String(exit.cause)}`)
      const config = exit.value
      expect(config.database.provider).toBe("postgres")
      expect(config.counterStore.provider).toBe("redis")
      expect(config.cluster.tls).toBeDefined()
      expect(config.encryption.rootKey.source).toBe("env")
      if (w.kind === "StatefulSet") {
        expect(config.cluster.runner.advertisedHost).toBe(`${podName}.svc-runners.svc-ns.svc.cluster.local`)
      }
    }
  })

  it("`svc config check` accepts it as the worker sees it", async () => {
    const file = await configFile(overlay)
    const worker = ofKind(overlay, "StatefulSet").find((s) => s.metadata.name === "svc-worker")
    const env = containerEnv(overlay, "svc-worker-0", worker.spec.template.spec.containers[0])
    const { stdout } = await run(process.execPath, [svcMain, "config", "check", "--config", file], {
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? "", ...env }
    })
    expect(stdout).toContain(`svc: configuration ok (${file})`)
  })
})

describe("the checks fail on a broken manifest", () => {
  it("a schema violation, a broken svc.yaml and an unknown kind are refused", async () => {
    const deployment = structuredClone(objects("production").find((o) => o.kind === "Deployment"))
    deployment.spec.replicas = "two"
    await expect(validate(deployment)).rejects.toThrow(/replicas/)
    await expect(validate({ apiVersion: "v1", kind: "Nonsense", metadata: { name: "x" } })).rejects.toThrow(/no schema/)
    const dir = path.join(work, "broken")
    await fs.promises.mkdir(dir, { recursive: true })
    const file = path.join(dir, "svc.yaml")
    const good = await fs.promises.readFile(path.join(repoRoot, "deploy/kubernetes/base/svc.yaml"), "utf8")
    await fs.promises.writeFile(file, good.replace("runner: { port: 34431", "runner: { prot: 34431"))
    const exit = await load(file, { SVC_ROOT_KEY: "x" })
    expect(Exit.isFailure(exit) && String(exit.cause)).toMatch(/cluster\.runner\.prot: Unexpected key/)
    const withoutTls = good.replace(/^ {2}tls: \{ ca: .*$/m, "")
    await fs.promises.writeFile(file, withoutTls)
    const plain = await load(file, { SVC_ROOT_KEY: "x", SVC__cluster__runner__host: "0.0.0.0" })
    expect(Exit.isFailure(plain) && String(plain.cause)).toMatch(/needs cluster\.tls/)
  })
})

describe("the dev runner certificate", () => {
  it("names every worker's advertised host (wildcard SAN) and is signed by the CA", async () => {
    const dir = path.join(work, "deploy/kubernetes/overlays/dev/secrets")
    const cert = new X509Certificate(await fs.promises.readFile(path.join(dir, "runner.pem")))
    const ca = new X509Certificate(await fs.promises.readFile(path.join(dir, "ca.pem")))
    expect(cert.verify(ca.publicKey)).toBe(true)
    const peer = { subject: {}, subjectaltname: cert.subjectAltName ?? "" }
    for (const pod of ["svc-worker-0", "svc-worker-7"]) {
      // biome-ignore lint/suspicious/noExplicitAny: checkServerIdentity takes a PeerCertificate; only these two fields are read
      expect(checkServerIdentity(`${pod}.svc-runners.svc-dev.svc.cluster.local`, peer as any)).toBeUndefined()
    }
    // biome-ignore lint/suspicious/noExplicitAny: as above
    expect(checkServerIdentity("svc-worker-0.svc-runners.other.svc.cluster.local", peer as any)).toBeInstanceOf(Error)
  })
})
