/**
 * Runs `workflowProcess.ts` as a real child process on the pinned Node (`process.execPath`) and
 * follows its `progress` lines. The child is SIGKILLed when the scope closes if it is still alive, and
 * exits by itself when its stdin (held open by this process) closes.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { type Duration, Effect } from "effect"
import type { Scope } from "effect"

const fixturePath = fileURLToPath(new URL("./workflowProcess.ts", import.meta.url))

/** How a child process ended. */
export interface ProcessExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A running fixture process. */
export interface FixtureProcess {
  /** Waits (bounded) for the `progress <event>` line and returns its detail; dies with the transcript otherwise. */
  readonly waitFor: (event: string, timeout?: Duration.Input) => Effect.Effect<string>
  /** Sends `signal` and waits (bounded) for the process to exit. */
  readonly kill: (signal: NodeJS.Signals, timeout?: Duration.Input) => Effect.Effect<ProcessExit>
  /** Waits (bounded) for the process to exit on its own. */
  readonly exited: (timeout?: Duration.Input) => Effect.Effect<ProcessExit>
}

/** Spawns the fixture with `args`; the scope's finaliser SIGKILLs it if it is still running. */
export const spawnFixture = (args: ReadonlyArray<string>): Effect.Effect<FixtureProcess, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [fixturePath, ...args], { stdio: ["pipe", "pipe", "pipe"] })
      const events = new Map<string, string>()
      const listeners = new Set<() => void>()
      let transcript = ""
      let exit: ProcessExit | undefined
      let buffered = ""
      const notify = () => {
        for (const listener of listeners) listener()
      }
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        transcript += chunk
        buffered += chunk
        const lines = buffered.split("\n")
        buffered = lines.pop() ?? ""
        for (const line of lines) {
          const match = /^progress (\S+) ?(.*)$/.exec(line)
          if (match?.[1] !== undefined) events.set(match[1], match[2] ?? "")
        }
        notify()
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        transcript += chunk
      })
      child.on("exit", (code, signal) => {
        exit = { code, signal }
        notify()
      })
      const until = <A>(label: string, timeout: Duration.Input, ready: () => A | undefined) =>
        Effect.callback<A>((resume) => {
          const check = () => {
            const value = ready()
            if (value !== undefined) {
              listeners.delete(check)
              resume(Effect.succeed(value))
            } else if (exit !== undefined) {
              listeners.delete(check)
              resume(Effect.die(`fixture exited (${exit.code ?? exit.signal}) before ${label}:\n${transcript}`))
            }
          }
          listeners.add(check)
          check()
          return Effect.sync(() => listeners.delete(check))
        }).pipe(
          Effect.timeoutOrElse({
            duration: timeout,
            orElse: () => Effect.die(`timed out waiting for ${label}:\n${transcript}`)
          })
        )
      const exited = (timeout: Duration.Input = "20 seconds") =>
        Effect.suspend(() =>
          exit !== undefined
            ? Effect.succeed(exit)
            : Effect.callback<ProcessExit>((resume) => {
                const check = () => {
                  if (exit !== undefined) {
                    listeners.delete(check)
                    resume(Effect.succeed(exit))
                  }
                }
                listeners.add(check)
                return Effect.sync(() => listeners.delete(check))
              }).pipe(
                Effect.timeoutOrElse({
                  duration: timeout,
                  orElse: () => Effect.die(`timed out waiting for exit:\n${transcript}`)
                })
              )
        )
      const fixture: FixtureProcess = {
        waitFor: (event, timeout = "30 seconds") => until(`progress ${event}`, timeout, () => events.get(event)),
        kill: (signal, timeout) => Effect.sync(() => child.kill(signal)).pipe(Effect.andThen(exited(timeout))),
        exited
      }
      return { child, fixture }
    }),
    ({ child, fixture }) =>
      child.exitCode === null && child.signalCode === null
        ? Effect.asVoid(Effect.exit(fixture.kill("SIGKILL", "5 seconds")))
        : Effect.void
  ).pipe(Effect.map(({ fixture }) => fixture))
