/**
 * PGlite opened in a worker thread of its own (`PgliteThread.ts`), the thread side of
 * `PgliteClient.makeWorker`, and opened ahead of it ({@link openAhead}). It loads nothing of PGlite
 * on the calling thread, so a caller can start the thread before loading the rest of its code.
 */
import { Worker } from "node:worker_threads"
import { templateFor } from "./PgliteTemplate.ts"
import type { ThreadRequest, ThreadResponse } from "./PgliteThread.ts"
import { useBaselineWasmCompiler } from "./WasmCompiler.ts"

/** The value under `Symbol.for(key)` on `globalThis`, made by `make` the first time. */
export const perProcess = <A>(key: string, make: () => A): A => {
  const symbol = Symbol.for(key)
  if (!Reflect.has(globalThis, symbol)) Reflect.set(globalThis, symbol, make())
  return Reflect.get(globalThis, symbol) as A
}

/** The data directory to open and the data-directory dump a first open unpacks (`PgliteTemplate.ts`). */
export interface ThreadConfig {
  readonly dataDir: string
  readonly template?: string | undefined
}

/** Spawns the thread and answers it once PGlite is open on `config.dataDir`. */
export const openThread = (config: ThreadConfig, options: { readonly unref?: boolean } = {}): Promise<Worker> =>
  new Promise<Worker>((resolve, reject) => {
    const thread = new Worker(new URL("./PgliteThread.ts", import.meta.url), {
      workerData: { dataDir: config.dataDir, template: config.template }
    })
    if (options.unref === true) thread.unref()
    const onOpen = (response: ThreadResponse) => {
      if (response.id !== 0) return
      thread.off("message", onOpen)
      thread.off("error", reject)
      if (response.ok) resolve(thread)
      else {
        void thread.terminate()
        reject(new Error(response.error.message))
      }
    }
    thread.on("message", onOpen)
    thread.once("error", reject)
  })

/**
 * Threads opening (or open on) a data directory ahead of `makeWorker`, by `dataDir` ({@link
 * openAhead}): one map per process (on `globalThis`), so a copy of this module evaluated again in
 * the same process (a test runner isolating its test files) takes over the threads of the last.
 */
const opening = perProcess("@svc/sql/PgliteOpen.opening", () => new Map<string, Promise<Worker>>())

/**
 * Starts opening PGlite on `config.dataDir` in a worker thread now, ahead of the `layerWorker`
 * (`makeWorker`) on the same `dataDir` that will take the thread over: the database opens while
 * the caller does other work (`@svc/testing` opens the next test's database in the background).
 * Until taken over the thread does not keep the process alive; `closeAhead` closes one not taken.
 */
export const openAhead = (config: { readonly dataDir: string }): void => {
  if (opening.has(config.dataDir)) return
  useBaselineWasmCompiler()
  const thread = openThread({ dataDir: config.dataDir, template: templateFor(config.dataDir) }, { unref: true })
  thread.catch(() => opening.delete(config.dataDir))
  opening.set(config.dataDir, thread)
}

/** Closes a thread `openAhead` started on `dataDir` that no `makeWorker` took over; answers whether there was one. */
export const closeAhead = async (dataDir: string): Promise<boolean> => {
  const thread = opening.get(dataDir)
  if (thread === undefined) return false
  opening.delete(dataDir)
  const open = await thread.catch(() => undefined)
  if (open !== undefined) await post(open, { kind: "close" }).finally(() => open.terminate())
  return true
}

let nextRequest = 1
const pending = new WeakMap<
  Worker,
  Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>
>()

/** Posts one request to `thread` and answers its result (a failure as an Error with the PostgreSQL code). */
export const post = (thread: Worker, request: Omit<ThreadRequest, "id">): Promise<unknown> => {
  let waiting = pending.get(thread)
  if (waiting === undefined) {
    const map = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()
    waiting = map
    pending.set(thread, map)
    thread.on("message", (response: ThreadResponse) => {
      const entry = map.get(response.id)
      if (entry === undefined) return
      map.delete(response.id)
      if (response.ok) entry.resolve(response.result)
      else entry.reject(Object.assign(new Error(response.error.message), response.error))
    })
    const failAll = (error: unknown) => {
      for (const entry of map.values()) entry.reject(error)
      map.clear()
    }
    thread.on("error", failAll)
    thread.on("exit", () => failAll(new Error("the PGlite worker thread exited")))
  }
  const id = nextRequest++
  const map = waiting
  return new Promise((resolve, reject) => {
    // A message to a thread that is gone (its `threadId` is then -1) would never be answered.
    if (thread.threadId === -1) return reject(new Error("the PGlite worker thread exited"))
    map.set(id, { resolve, reject })
    thread.postMessage({ ...request, id })
  })
}

/**
 * The thread `openAhead` started on `dataDir`, taken over (it keeps the process alive again from
 * now on), or a new thread opening it.
 */
export const takeOrOpenThread = (config: ThreadConfig): Promise<Worker> => {
  const ahead = opening.get(config.dataDir)
  opening.delete(config.dataDir)
  if (ahead === undefined) return openThread(config)
  return ahead.then((thread) => {
    thread.ref()
    return thread
  })
}
