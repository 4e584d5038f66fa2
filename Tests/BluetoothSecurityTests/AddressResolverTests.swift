import BluetoothCrypto
import BluetoothWire
import Testing
@testable import BluetoothSecurity

/// Core Vol 3 Part H Appendix D.7: ah(IRK, prand) = 0x0dfbaa for this IRK and prand.
let vectorIRK: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B
let vectorRPA = BluetoothAddress(rawValue: 0x7081_940D_FBAA)

@Suite struct AddressResolverTests {
    @Test func theSpecificationsExampleResolves() {
        #expect(ResolvablePrivateAddress.isResolvable(LEAddress(vectorRPA, type: .random)))
        #expect(ResolvablePrivateAddress.resolves(vectorRPA, irk: vectorIRK))
        // one bit of the hash off, another key, or another prand: no
        #expect(!ResolvablePrivateAddress.resolves(BluetoothAddress(rawValue: 0x7081_940D_FBAB), irk: vectorIRK))
        #expect(!ResolvablePrivateAddress.resolves(vectorRPA, irk: vectorIRK ^ 1))
        #expect(!ResolvablePrivateAddress.resolves(BluetoothAddress(rawValue: 0x7081_950D_FBAA), irk: vectorIRK))
    }

    /// The resolver's path (the IRK's AES schedule expanded once) on the same vector, and
    /// against the one-shot ah for many addresses and keys.
    @Test func expandedKeysAgreeWithTheSecurityFunction() throws {
        let key = AES128Key(vectorIRK)
        #expect(ResolvablePrivateAddress.resolves(vectorRPA, key: key))
        #expect(!ResolvablePrivateAddress.resolves(BluetoothAddress(rawValue: 0x7081_940D_FBAB), key: key))
        #expect(!ResolvablePrivateAddress.resolves(BluetoothAddress(rawValue: 0xC081_940D_FBAA), key: key))
        var x: UInt64 = 0x5EED
        for _ in 0 ..< 200 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let irk = UInt128(x) << 64 | UInt128(x &* 0x9E37_79B9_7F4A_7C15)
            let k = AES128Key(irk)
            let made = try ResolvablePrivateAddress.make(irk: irk, random: UInt32(truncatingIfNeeded: x >> 20))
            #expect(ResolvablePrivateAddress.resolves(made, key: k))
            let other = BluetoothAddress(rawValue: made.rawValue ^ UInt64(1 + (x >> 40) % 0xFF_FFFF))
            #expect(ResolvablePrivateAddress.resolves(other, key: k) == ResolvablePrivateAddress.resolves(other, irk: irk))
            #expect(!ResolvablePrivateAddress.resolves(made, key: AES128Key(irk ^ 1)))
        }
    }

    @Test func onlyRandomAddressesWithTopBits01AreResolvable() {
        #expect(!ResolvablePrivateAddress.isResolvable(LEAddress(vectorRPA, type: .public)))
        #expect(!ResolvablePrivateAddress.isResolvable(LEAddress(BluetoothAddress(rawValue: 0xC0FF_EE00_0001), type: .random)))  // static
        #expect(!ResolvablePrivateAddress.isResolvable(LEAddress(BluetoothAddress(rawValue: 0x3FFF_EE00_0001), type: .random)))  // non-resolvable
        // A static address's upper bits are not prand: resolves() refuses them without AES.
        #expect(!ResolvablePrivateAddress.resolves(BluetoothAddress(rawValue: 0xC081_940D_FBAA), irk: vectorIRK))
    }

    @Test func madeAddressesResolveAndHaveTheRightShape() throws {
        for random: UInt32 in [0, 1, 0x3F_FFFF, 0x12_3456, 0xFFFF_FFFF] {
            let a = try ResolvablePrivateAddress.make(irk: vectorIRK, random: random)
            #expect(ResolvablePrivateAddress.isResolvable(LEAddress(a, type: .random)))
            #expect(ResolvablePrivateAddress.resolves(a, irk: vectorIRK))
            let prand = ResolvablePrivateAddress.split(a).prand & 0x3F_FFFF
            #expect(prand != 0 && prand != 0x3F_FFFF, "the random part is neither all zeros nor all ones")
        }
        // The specification's prand gives the specification's address.
        #expect(try ResolvablePrivateAddress.make(irk: vectorIRK, random: 0x30_8194) == vectorRPA)
    }

    @Test func theResolverFindsTheIdentityAndForgetsRemovedKeys() throws {
        let identity = LEAddress(BluetoothAddress(rawValue: 0xF0F1_F2F3_F401), type: .public)
        let other = LEAddress(BluetoothAddress(rawValue: 0xC0DE_0000_0001), type: .random)
        var r = AddressResolver([.init(irk: 0x1234, identity: other), .init(irk: vectorIRK, identity: identity)])
        let rpa = LEAddress(vectorRPA, type: .random)
        #expect(r.resolve(rpa) == identity)
        #expect(r.resolve(rpa) == identity, "a cached answer is the same answer")
        #expect(r.resolve(LEAddress(vectorRPA, type: .public)) == nil)
        let fresh = LEAddress(try ResolvablePrivateAddress.make(irk: 0x1234, random: 99), type: .random)
        #expect(r.resolve(fresh) == other)
        // replacing a key by identity, then removing it
        r.add(.init(irk: 0x5678, identity: other))
        #expect(r.entries.count == 2)
        #expect(r.resolve(fresh) == nil, "the old key's addresses no longer resolve")
        r.remove(identity: identity)
        #expect(r.resolve(rpa) == nil)
    }
}
