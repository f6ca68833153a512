import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type AddressClass, addressAllowed, classifyAddress } from "./HostPolicy.ts"

describe("classifyAddress", () => {
  it.each<readonly [string, AddressClass]>([
    ["8.8.8.8", "public"],
    ["93.184.216.34", "public"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["100.127.255.255", "private"],
    ["100.128.0.1", "public"],
    ["198.18.0.1", "private"],
    ["169.254.1.1", "link_local"],
    ["169.254.169.254", "metadata"],
    ["100.100.100.200", "metadata"],
    ["192.0.0.192", "metadata"],
    ["192.0.0.1", "reserved"],
    ["192.0.2.1", "reserved"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["0:0:0:0:0:ffff:7f00:0001", "loopback"],
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:8.8.8.8", "public"],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::127.0.0.1", "loopback"],
    ["::10.0.0.1", "private"],
    ["64:ff9b::10.0.0.1", "private"],
    ["64:ff9b::a9fe:a9fe", "metadata"],
    ["64:ff9b::8.8.8.8", "public"],
    ["64:ff9b:1::1", "private"],
    ["2002:7f00:1::1", "loopback"],
    ["2001:db8::1", "reserved"],
    ["2001::1", "reserved"],
    ["fd00:ec2::254", "metadata"],
    ["fd00:ec2:0:0:0:0:0:254", "metadata"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fe80::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["febf::1", "link_local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["2606:4700::1111", "public"],
    ["100::1", "reserved"],
    ["4000::1", "reserved"],
    ["example.com", "reserved"],
    ["", "reserved"],
    ["1.2.3", "reserved"],
    ["0127.0.0.1", "reserved"]
  ])("%s is %s", (ip, expected) => {
    assert.strictEqual(classifyAddress(ip), expected)
  })

  it("never throws on arbitrary strings", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.ipV4(), fc.ipV4Extended(), fc.ipV6(), fc.stringMatching(/^[0-9a-f:.%]{0,45}$/)),
        (text) => {
          const kind = classifyAddress(text)
          assert.isString(kind)
        }
      )
    )
  })

  it("IPv4-mapped, IPv4-translated and NAT64 forms classify like their IPv4", () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        const octets = ip.split(".").map(Number)
        const hex = (a: number, b: number) => ((a << 8) | b).toString(16)
        const hi = hex(octets[0] ?? 0, octets[1] ?? 0)
        const lo = hex(octets[2] ?? 0, octets[3] ?? 0)
        const expected = classifyAddress(ip)
        for (const form of [
          `::ffff:${ip}`,
          `::ffff:${hi}:${lo}`,
          `0:0:0:0:0:FFFF:${hi}:${lo}`,
          `::ffff:0:${ip}`,
          `64:ff9b::${ip}`,
          `64:ff9b::${hi}:${lo}`
        ]) {
          assert.strictEqual(classifyAddress(form), expected, form)
        }
      })
    )
  })

  it("ranges hold across random members", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), (a, b) => {
        assert.strictEqual(classifyAddress(`127.${a}.${b}.1`), "loopback")
        assert.strictEqual(classifyAddress(`10.${a}.${b}.1`), "private")
        assert.strictEqual(classifyAddress(`172.${16 + (a % 16)}.${b}.1`), "private")
        assert.strictEqual(classifyAddress(`100.${64 + (a % 64)}.${b}.1`), "private")
        assert.strictEqual(classifyAddress(`${224 + (a % 16)}.${b}.0.1`), "multicast")
        assert.strictEqual(classifyAddress(`fe${(0x80 + (a % 64)).toString(16)}::${b.toString(16)}`), "link_local")
      })
    )
  })
})

describe("addressAllowed", () => {
  it.each<readonly [string, boolean, boolean]>([
    ["8.8.8.8", false, true],
    ["127.0.0.1", false, false],
    ["127.0.0.1", true, true],
    ["::1", true, true],
    ["10.0.0.1", false, false],
    ["10.0.0.1", true, true],
    ["169.254.169.254", true, false],
    ["169.254.1.1", true, false],
    ["fd00:ec2::254", true, false],
    ["0.0.0.0", true, false],
    ["224.0.0.1", true, false],
    ["255.255.255.255", true, false],
    ["not-an-ip", true, false]
  ])("%s with allowPrivateNetworks=%s is allowed: %s", (ip, allowPrivate, expected) => {
    assert.strictEqual(addressAllowed(ip, allowPrivate).ok, expected)
  })

  it("says why", () => {
    assert.deepStrictEqual(addressAllowed("169.254.169.254", true), {
      ok: false,
      reason: "a cloud metadata address (never allowed)"
    })
    assert.deepStrictEqual(addressAllowed("127.0.0.1", false), {
      ok: false,
      reason: "a loopback address (private networks not allowed)"
    })
  })
})
