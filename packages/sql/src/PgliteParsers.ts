/**
 * How PGlite decodes row values, shared by the in-process client and its worker thread: as
 * @effect/sql-pg decodes them, so code behaves the same on every client.
 */
const OID = { int8: 20, timestamp: 1114, date: 1082 } as const

export const pgliteParsers = {
  [OID.int8]: (value: string) => BigInt(value),
  [OID.date]: (value: string) => value,
  [OID.timestamp]: (value: string) =>
    value === "infinity" || value === "-infinity" ? new Date(Number.NaN) : new Date(`${value.replace(" ", "T")}Z`)
}
