/**
 * Which upstream addresses a proxied request may reach (host names: `hostAllowed` in the domain) (SECURITY.md "Credentials never
 * leave where they belong", API-CONVENTIONS "Proxy"). Pure: no I/O, no DNS.
 */
import { isIP } from "node:net"

/** What an upstream address is, for the SSRF guard. */
export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link_local"
  | "metadata"
  | "unspecified"
  | "multicast"
  | "reserved"

const parseIPv4 = (text: string): number | undefined => {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (match === null) return undefined
  let value = 0
  for (let i = 1; i <= 4; i++) {
    const octet = Number(match[i])
    if (octet > 255) return undefined
    value = value * 256 + octet
  }
  return value
}

/** Eight 16-bit groups of an IPv6 address (an IPv4 tail folded in), or undefined. */
const parseIPv6 = (text: string): ReadonlyArray<number> | undefined => {
  let source = text
  const lastColon = source.lastIndexOf(":")
  const tail = source.slice(lastColon + 1)
  if (tail.includes(".")) {
    const v4 = parseIPv4(tail)
    if (v4 === undefined) return undefined
    source = `${source.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`
  }
  const halves = source.split("::")
  if (halves.length > 2) return undefined
  const split = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":"))
  const head = split(halves[0])
  const rest = split(halves[1])
  const missing = 8 - head.length - rest.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined
  const groups = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => "0"), ...rest]
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return undefined
  return groups.map((group) => Number.parseInt(group, 16))
}

const v4 = (text: string): number => parseIPv4(text) ?? 0

const v4Ranges: ReadonlyArray<readonly [number, number, AddressClass]> = [
  [v4("169.254.169.254"), 32, "metadata"],
  [v4("100.100.100.200"), 32, "metadata"],
  [v4("192.0.0.192"), 32, "metadata"],
  [v4("255.255.255.255"), 32, "reserved"],
  [v4("0.0.0.0"), 8, "unspecified"],
  [v4("127.0.0.0"), 8, "loopback"],
  [v4("10.0.0.0"), 8, "private"],
  [v4("172.16.0.0"), 12, "private"],
  [v4("192.168.0.0"), 16, "private"],
  [v4("100.64.0.0"), 10, "private"],
  [v4("198.18.0.0"), 15, "private"],
  [v4("169.254.0.0"), 16, "link_local"],
  [v4("192.0.0.0"), 24, "reserved"],
  [v4("192.0.2.0"), 24, "reserved"],
  [v4("192.88.99.0"), 24, "reserved"],
  [v4("198.51.100.0"), 24, "reserved"],
  [v4("203.0.113.0"), 24, "reserved"],
  [v4("224.0.0.0"), 4, "multicast"],
  [v4("240.0.0.0"), 4, "reserved"]
]

const classifyV4 = (value: number): AddressClass => {
  for (const [base, bits, kind] of v4Ranges) {
    const size = 2 ** (32 - bits)
    if (Math.floor(value / size) === Math.floor(base / size)) return kind
  }
  return "public"
}

const classifyV6 = (g: ReadonlyArray<number>): AddressClass => {
  const at = (i: number): number => g[i] ?? 0
  const zeroUpTo = (end: number): boolean => g.slice(0, end).every((x) => x === 0)
  const embedded = (): AddressClass => classifyV4(at(6) * 65536 + at(7))
  if (zeroUpTo(7)) return at(7) === 0 ? "unspecified" : at(7) === 1 ? "loopback" : embedded()
  if (at(0) === 0xfd00 && at(1) === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && at(7) === 0x254) {
    return "metadata"
  }
  if (zeroUpTo(5) && at(5) === 0xffff) return embedded() // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeroUpTo(4) && at(4) === 0xffff && at(5) === 0) return embedded() // ::ffff:0:a.b.c.d (IPv4-translated)
  if (zeroUpTo(6)) return embedded() // ::a.b.c.d (IPv4-compatible)
  if (at(0) === 0x64 && at(1) === 0xff9b) {
    if (g.slice(2, 6).every((x) => x === 0)) return embedded() // 64:ff9b::/96 NAT64
    if (at(2) === 1) return "private" // 64:ff9b:1::/48 local-use NAT64
  }
  if (at(0) === 0x2002) return classifyV4(at(1) * 65536 + at(2)) // 6to4
  if (at(0) === 0x2001 && (at(1) < 0x200 || at(1) === 0x0db8)) return "reserved" // Teredo, ORCHID, benchmarking, docs
  if (at(0) === 0x3fff && at(1) < 0x1000) return "reserved" // documentation (RFC 9637)
  if ((at(0) & 0xfe00) === 0xfc00) return "private" // fc00::/7 unique local
  if ((at(0) & 0xffc0) === 0xfe80) return "link_local" // fe80::/10
  if ((at(0) & 0xffc0) === 0xfec0) return "private" // fec0::/10 deprecated site-local
  if ((at(0) & 0xff00) === 0xff00) return "multicast"
  if ((at(0) & 0xe000) === 0x2000) return "public" // 2000::/3 global unicast
  return "reserved"
}

/** Classifies an IPv4 or IPv6 address (embedded IPv4 forms by their IPv4); anything else is `reserved`. */
export const classifyAddress = (ip: string): AddressClass => {
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip
  const address = bare.includes("%") ? bare.slice(0, bare.indexOf("%")) : bare
  const family = isIP(address)
  if (family === 4) {
    const value = parseIPv4(address)
    return value === undefined ? "reserved" : classifyV4(value)
  }
  if (family === 6) {
    const groups = parseIPv6(address)
    return groups === undefined ? "reserved" : classifyV6(groups)
  }
  return "reserved"
}

const classText: Record<AddressClass, string> = {
  public: "a public address",
  loopback: "a loopback address",
  private: "a private-network address",
  link_local: "a link-local address",
  metadata: "a cloud metadata address",
  unspecified: "an unspecified address",
  multicast: "a multicast address",
  reserved: "a reserved or non-routable address"
}

/** Public always; loopback/private only with `allowPrivateNetworks`; everything else never. */
export const addressAllowed = (
  ip: string,
  allowPrivateNetworks: boolean
): { readonly ok: true } | { readonly ok: false; readonly reason: string } => {
  const kind = classifyAddress(ip)
  if (kind === "public") return { ok: true }
  if (kind === "loopback" || kind === "private") {
    return allowPrivateNetworks
      ? { ok: true }
      : { ok: false, reason: `${classText[kind]} (private networks not allowed)` }
  }
  return { ok: false, reason: `${classText[kind]} (never allowed)` }
}
