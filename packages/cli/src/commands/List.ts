/**
 * `cli list connectors` and `cli list connections` (spec 4.8): page through the list endpoints of
 * the api with the typed client, following cursors, and print JSON, JSON lines or a table.
 */
import { Config, Console, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import type { Connection } from "@svc/domain/Connection"
import { ConnectionState } from "@svc/domain/Connection"
import type { Connector } from "@svc/domain/Connector"
import { VersionState } from "@svc/domain/Connector"
import { defaultPageSize, maxPageSize, NamespaceFilterParam, OrderParam, orderFields } from "@svc/domain/Resource"
import { LabelSelector } from "@svc/domain/Selector"
import { apiFlags, connectApi, validateApiFlags } from "../ApiClient.ts"
import { toApiFailure } from "../ApiFailure.ts"
import {
  type Column,
  formatJsonArray,
  formatJsonLines,
  formatTable,
  outputFlag,
  shortTime,
  terminalWidth
} from "../Output.ts"
import { followPages, type PageOf } from "../Paging.ts"
import { progressLine } from "../Progress.ts"
import { root } from "../Root.ts"

/** Columns of `list connectors -o table`. */
export const connectorColumns: ReadonlyArray<Column<Connector>> = [
  { header: "ID", value: (c) => c.id },
  { header: "NAME", value: (c) => c.name },
  { header: "NAMESPACE", value: (c) => c.namespace },
  { header: "TYPE", value: (c) => c.type },
  { header: "VERSION", value: (c) => String(c.version) },
  { header: "STATE", value: (c) => c.state },
  { header: "CREATED", value: (c) => shortTime(c.createdAt) }
]

/** Columns of `list connections -o table`. */
export const connectionColumns: ReadonlyArray<Column<Connection>> = [
  { header: "ID", value: (c) => c.id },
  { header: "NAME", value: (c) => c.name },
  { header: "NAMESPACE", value: (c) => c.namespace },
  { header: "CONNECTOR", value: (c) => c.connectorId },
  { header: "VERSION", value: (c) => String(c.connectorVersion) },
  { header: "STATE", value: (c) => c.state },
  { header: "HEALTH", value: (c) => c.healthState },
  { header: "CREATED", value: (c) => shortTime(c.createdAt) }
]

/** Filters and paging every list shares. */
const listFlags = {
  order: Flag.String("order").pipe(
    Flag.withMetavar("FIELD [ASC|DESC]"),
    Flag.withDescription(
      `Sort order: one of ${orderFields.join(", ")}, then ASC or DESC (server default: createdAt ASC)`
    ),
    Flag.withSchema(OrderParam(orderFields)),
    Flag.optional
  ),
  limit: Flag.Int("limit").pipe(
    Flag.withMetavar("N"),
    Flag.withDescription("Print at most N items in all (default: every item, following cursors)"),
    Flag.optional
  ),
  pageSize: Flag.Int("pageSize").pipe(
    Flag.withMetavar("N"),
    Flag.withDescription(`Items asked for per request, 1 to ${maxPageSize} (default ${defaultPageSize})`),
    Flag.withDefault(defaultPageSize)
  ),
  namespace: Flag.String("namespace").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription("Only this namespace (root.acme) or a subtree (root.acme.**)"),
    Flag.withSchema(NamespaceFilterParam),
    Flag.optional
  ),
  labelSelector: Flag.String("labelSelector").pipe(
    Flag.withMetavar("SELECTOR"),
    Flag.withDescription("Label selector (spec 2.6), e.g. env=prod,team"),
    Flag.withSchema(LabelSelector),
    Flag.optional
  ),
  name: Flag.String("name").pipe(
    Flag.withMetavar("NAME"),
    Flag.withDescription("Only resources with this exact name"),
    Flag.optional
  )
}

/** Output and connection flags, listed after each list's own filters. */
const outputAndApiFlags = {
  output: outputFlag(["json", "jsonl", "table"], "table"),
  ...apiFlags
}

interface ListFlags {
  readonly limit: Option.Option<number>
  readonly pageSize: number
}

/** Usage errors of the paging flags; empty when valid. */
export const listFlagErrors = (flags: ListFlags): ReadonlyArray<string> => [
  ...(Option.isSome(flags.limit) && flags.limit.value < 1 ? ["--limit must be at least 1"] : []),
  ...(flags.pageSize < 1 || flags.pageSize > maxPageSize ? [`--pageSize must be from 1 to ${maxPageSize}`] : [])
]

/** The query fields of a first page: only the filters that were given. */
const present = <T extends Record<string, Option.Option<unknown>>>(
  fields: T
): { [K in keyof T]?: T[K] extends Option.Option<infer A> ? A : never } => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(fields)) if (Option.isSome(value)) out[key] = value.value
  return out as { [K in keyof T]?: T[K] extends Option.Option<infer A> ? A : never }
}

/**
 * Pages through one list and prints it: jsonl as each page arrives, json and table once
 * complete. When more than one page is needed, a progress line on stderr counts them.
 */
export const printList = Effect.fnUntraced(function* <A, E, R>(options: {
  readonly noun: string
  readonly output: "json" | "jsonl" | "table"
  readonly columns: ReadonlyArray<Column<A>>
  readonly limit: Option.Option<number>
  readonly pageSize: number
  readonly fetch: (cursor: string | undefined, limit: number) => Effect.Effect<PageOf<A>, E, R>
}) {
  const progress = yield* progressLine
  const collected: Array<A> = []
  const done = yield* followPages({
    fetch: options.fetch,
    max: Option.getOrUndefined(options.limit),
    pageSize: options.pageSize,
    onPage: (items, sofar) =>
      Effect.gen(function* () {
        if (options.output === "jsonl") {
          for (const line of formatJsonLines(items)) yield* Console.log(line)
        } else {
          collected.push(...items)
        }
        if (sofar.pages > 1)
          yield* progress.update(`listing ${options.noun}: ${sofar.items} so far (page ${sofar.pages})`)
      })
  })
  if (done.pages > 1) yield* progress.finish(`listed ${done.items} ${options.noun} in ${done.pages} pages`)
  if (options.output === "json") yield* Console.log(formatJsonArray(collected))
  if (options.output === "table") {
    if (collected.length === 0) yield* Console.error(`no ${options.noun}`)
    else {
      const columns = yield* Config.option(Config.String("COLUMNS")).pipe(Effect.orElseSucceed(() => Option.none()))
      const lineWidth = terminalWidth(process.stdout, Option.getOrUndefined(columns))
      const lines = formatTable(options.columns, collected, { lineWidth })
      for (const line of lines) yield* Console.log(line)
    }
  }
})

const connectors = Command.make(
  "connectors",
  {
    state: Flag.Literals("state", VersionState.literals).pipe(
      Flag.withDescription("Only connectors whose current version is in this state"),
      Flag.optional
    ),
    type: Flag.String("type").pipe(
      Flag.withMetavar("TYPE"),
      Flag.withDescription("Only connectors whose current version has this definition type"),
      Flag.optional
    ),
    ...listFlags,
    ...outputAndApiFlags
  },
  Effect.fn("ListConnectors")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const filters = present({
      state: flags.state,
      type: flags.type,
      order: flags.order,
      namespace: flags.namespace,
      labelSelector: flags.labelSelector,
      name: flags.name
    })
    yield* printList({
      noun: "connectors",
      output: flags.output,
      columns: connectorColumns,
      limit: flags.limit,
      pageSize: flags.pageSize,
      fetch: (cursor, limit) =>
        client.connectors
          .list({ query: cursor === undefined ? { ...filters, limit } : { cursor, limit } })
          .pipe(Effect.mapError(toApiFailure(target.apiUrl, "list connectors")))
    })
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags, listFlagErrors(flags))),
  Command.withDescription("List connectors (every page, following cursors)"),
  Command.withExamples([
    { command: "cli list connectors", description: "Every connector as a table" },
    {
      command: "cli list connectors --state primary --type github --order 'name ASC' -o jsonl",
      description: "Published github connectors by name, one JSON object per line"
    },
    { command: "cli list connectors --limit 20 -o json", description: "The first 20 as a JSON array" }
  ])
)

const connections = Command.make(
  "connections",
  {
    state: Flag.Literals("state", ConnectionState.literals).pipe(
      Flag.withDescription("Only connections in this state"),
      Flag.optional
    ),
    connectorId: Flag.String("connectorId").pipe(
      Flag.withMetavar("ID"),
      Flag.withDescription("Only connections of this connector (cxr_…)"),
      Flag.optional
    ),
    ...listFlags,
    ...outputAndApiFlags
  },
  Effect.fn("ListConnections")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const filters = present({
      state: flags.state,
      connectorId: flags.connectorId,
      order: flags.order,
      namespace: flags.namespace,
      labelSelector: flags.labelSelector,
      name: flags.name
    })
    yield* printList({
      noun: "connections",
      output: flags.output,
      columns: connectionColumns,
      limit: flags.limit,
      pageSize: flags.pageSize,
      fetch: (cursor, limit) =>
        client.connections
          .list({ query: cursor === undefined ? { ...filters, limit } : { cursor, limit } })
          .pipe(Effect.mapError(toApiFailure(target.apiUrl, "list connections")))
    })
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags, listFlagErrors(flags))),
  Command.withDescription("List connections (every page, following cursors)"),
  Command.withExamples([
    { command: "cli list connections -o table", description: "Every connection as a table" },
    {
      command: "cli list connections --state configured --connectorId cxr_123 --order 'createdAt DESC' --limit 50",
      description: "The 50 newest configured connections of one connector"
    },
    { command: "cli list connections --namespace 'root.acme.**' -o jsonl", description: "A subtree as JSON lines" }
  ])
)

/** `cli list <connectors|connections>`. */
export const list = Command.make("list").pipe(
  Command.withDescription("List resources of a running svc through its api"),
  Command.withExamples([
    { command: "cli list connectors", description: "Every connector as a table" },
    { command: "cli list connections -o jsonl", description: "Every connection, one JSON object per line" }
  ]),
  Command.withSubcommands([connectors, connections])
)
