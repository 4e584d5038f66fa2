import BluetoothCrypto
import COpenSSLReference
import BluetoothHost
import BluetoothWire
import Synchronization
import Testing
@testable import BluetoothGATT

/// The Database Hash and robust caching (Core Vol 3 Part G §2.5.2.1, §7.3).
@Suite struct DatabaseHashTests {
    @Test("The specification's example database hashes to F1CA2D48ECF58BAC8A8830BBB9FBA990")
    func specificationExample() throws {
        let table = try GATTAttributeTable(services: SpecExampleDatabase.services)
        #expect(hexString(table.hash) == "F1 CA 2D 48 EC F5 8B AC 8A 88 30 BB B9 FB A9 90")
        #expect(table.lastHandle == 0x16)
        // Read over the air least significant octet first (GATT/SR/GAS/BV-02-C, as PTS expects).
        var s = ATTServer(table: table)
        let c = ATTServerClientID(rawValue: 1)
        s.connect(c)
        var out: [UInt8] = []
        _ = bytes("08 01 00 FF FF 2A 2B").withUnsafeBytes { s.receive(from: c, pdu: $0, now: 0) { out = Array($0) } }
        #expect(out == bytes("09 12 0D 00") + table.hash.reversed())
    }

    @Test("AES-CMAC matches RFC 4493's examples; AES-128 matches FIPS-197")
    func cryptoVectors() throws {
        let key = bytes("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        #expect(try BluetoothCrypto.aesCMAC(key: key, message: []) == bytes("bb1d6929 e9593728 7fa37d12 9b756746"))
        #expect(try BluetoothCrypto.aesCMAC(key: key, message: bytes("6bc1bee2 2e409f96 e93d7e11 7393172a"))
                == bytes("070a16b4 6b4d4144 f79bdd9d d04a287c"))
        #expect(try BluetoothCrypto.aesCMAC(key: key, message: bytes("""
            6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51 30c81c46 a35ce411
            """)) == bytes("dfa66747 de9ae630 30ca3261 1497c827"))
        #expect(try BluetoothCrypto.aes128(key: bytes("000102030405060708090a0b0c0d0e0f"),
                                           block: bytes("00112233445566778899aabbccddeeff"))
                == bytes("69c4e0d8 6a7b0430 d8cdb780 70b4c55a"))
    }

    @Test("AES-CMAC agrees with OpenSSL's EVP CMAC on every length 0...80 and random keys")
    func cmacAgreesWithEVP() throws {
        var rng = SplitMix(seed: 7)
        for n in 0 ... 80 {
            let key = (0 ..< 16).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let m = (0 ..< n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            // The reference: OpenSSL's EVP CMAC (in the test binary only; see COpenSSLReference/shim.h).
            var reference = [UInt8](repeating: 0, count: 16)
            let ok = key.withUnsafeBufferPointer { k in
                m.withUnsafeBufferPointer { mb in
                    reference.withUnsafeMutableBufferPointer { o in hcigatt_aes_cmac_evp(k.baseAddress, mb.baseAddress, mb.count, o.baseAddress) }
                }
            }
            #expect(ok == 1)
            #expect(try BluetoothCrypto.aesCMAC(key: key, message: m) == reference, "length \(n)")
        }
    }

    @Test("The hash changes when the database does, and not otherwise")
    func hashFollowsTheDatabase() throws {
        let a = try GATTAttributeTable(services: ServerHarness.services())
        let b = try GATTAttributeTable(services: ServerHarness.services())
        #expect(a.hash == b.hash)
        var more = ServerHarness.services()
        more.append(GATTLocalService(uuid: BluetoothUUID(0x180F)))
        #expect(try GATTAttributeTable(services: more).hash != a.hash)
    }

    @Test("Robust caching: a change-unaware client gets Database Out Of Sync once, then is change-aware")
    func outOfSyncOnce() throws {
        var h = try ServerHarness()
        #expect(h.send("12 0B 00 01") == "13", "robust caching enabled")
        #expect(h.send("0A 0B 00") == "0B 01")
        _ = h.server.replaceTable(try GATTAttributeTable(services: ServerHarness.services()))
        #expect(h.server.isChangeAware(h.a) == false)
        #expect(h.send("52 13 00 07 00") == nil, "commands from a change-unaware client are ignored")
        #expect(h.send("0A 13 00") == "01 0A 00 00 12")
        #expect(h.send("0A 13 00") == "0B 05 00")
        #expect(h.server.isChangeAware(h.a) == true)
        // A client without robust caching is never told.
        #expect(h.send("0A 13 00", from: h.b) == "0B 05 00")
    }

    @Test("Robust caching: reading the Database Hash by type makes the client change-aware")
    func readingTheHashMakesAware() throws {
        var h = try ServerHarness()
        #expect(h.send("12 0B 00 01") == "13")
        _ = h.server.replaceTable(try GATTAttributeTable(services: ServerHarness.services()))
        let r = h.send("08 01 00 FF FF 2A 2B")
        #expect(r?.hasPrefix("09 12 0D 00") == true)
        #expect(h.server.isChangeAware(h.a) == true)
        #expect(h.send("0A 13 00") == "0B 05 00")
    }

    @Test("Client Supported Features: bits cannot be cleared (Value Not Allowed); unknown bits are dropped")
    func clientSupportedFeatures() throws {
        var h = try ServerHarness()
        #expect(h.send("12 0B 00 05") == "13")
        #expect(h.send("0A 0B 00") == "0B 05")
        #expect(h.send("12 0B 00 01") == "01 12 0B 00 13")
        #expect(h.send("12 0B 00 FF") == "13")
        #expect(h.send("0A 0B 00") == "0B 07")
        #expect(h.send("0A 0B 00", from: h.b) == "0B 00", "per client")
    }
}

/// A bonded client's configuration across connections (Core Vol 3 Part G §3.3.3.3, §7.1).
@Suite struct BondedClientStateTests {
    /// Client A goes, the database gains a Battery service (2A19 notify) before the ones
    /// it knew, and A comes back encrypted with its bond: whether Service Changed is due.
    static func backAfterAChange(_ h: inout ServerHarness) throws -> Bool {
        let kept = try #require(h.server.bondedState(of: h.a))
        h.server.disconnect(h.a)
        var services = ServerHarness.services()
        services.insert(GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], value: .stored([99])),
        ]), at: 2)
        _ = h.server.replaceTable(try GATTAttributeTable(services: services))
        h.server.connect(h.a, security: ServerHarness.encrypted)
        return h.server.restore(h.a, kept)
    }

    @Test("GATT/SR/GAN/BV-03-C, GAI/BV-02-C: a bonded client's CCCDs come back on its next connection")
    func cccdsComeBack() throws {
        var h = try ServerHarness()
        h.encrypt(h.a)
        #expect(h.send("12 17 00 01 00") == "13")   // notify the 128-bit characteristic
        #expect(h.send("12 09 00 02 00") == "13")   // Service Changed indications
        #expect(h.send("12 0B 00 01") == "13")      // robust caching
        let kept = try #require(h.server.bondedState(of: h.a))
        #expect(kept.configurations == [0x0017: 0x0001, 0x0009: 0x0002] && kept.serviceChanged == 0x0002)
        #expect(kept.features == .robustCaching && kept.changeAware && kept.databaseHash == h.server.table.hash)
        h.server.disconnect(h.a)
        // The next connection: nothing until the bond is back.
        h.server.connect(h.a, security: ServerHarness.encrypted)
        #expect(h.server.subscribers(of: 0x0016).isEmpty)
        let due = h.server.restore(h.a, kept)
        #expect(!due, "same database: no Service Changed due")
        #expect(h.server.configuration(of: h.a, valueHandle: 0x0016) == .notify)
        #expect(h.server.features(of: h.a) == .robustCaching && h.server.isChangeAware(h.a) == true)
        var out: [UInt8] = []
        try h.server.notify(h.a, handle: 0x0016, value: UnsafeRawBufferPointer(start: nil, count: 0)) { out = Array($0) }
        #expect(out == bytes("1B 16 00"))
    }

    @Test("A change-unaware client gets no notifications until it is aware again; then the held values")
    func updatesWaitForAChangeAwareClient() throws {
        var h = try ServerHarness()
        h.encrypt(h.a)
        #expect(h.send("12 09 00 02 00") == "13")
        let due = try Self.backAfterAChange(&h)
        #expect(due)
        let level = try #require(h.server.table.layout.characteristic(uuid: BluetoothUUID(0x2A19))?.valueHandle)
        // It subscribes (its requests are served: it has not asked for robust caching).
        let subscribed = h.send([0x12, UInt8(level + 1), 0x00, 0x01, 0x00])
        #expect(subscribed == [0x13])
        try h.server.setValue([42], for: level)
        #expect(throws: ATTServerError.changeUnaware(h.a, handle: level)) {
            _ = try h.server.notify(h.a, handle: level, value: [42]) { _ in Issue.record("sent to a change-unaware client") }
        }
        _ = h.takeEvents()
        // Service Changed goes (it is what makes the client aware); its confirmation ends it.
        try h.server.serviceChangedIndication(to: h.a, now: 0) { _ in }
        let confirmed = h.send("1E")
        #expect(confirmed == nil)
        let events = h.takeEvents()
        #expect(events.contains(.changeAware(h.a, held: [level])), "the held update is handed over: \(events)")
        var out: [UInt8] = []
        _ = try h.server.notify(h.a, handle: level, value: [43]) { out = Array($0) }
        #expect(out == [0x1B, UInt8(level), 0x00, 43])
    }

    @Test("A bonded client that missed a change is change-unaware and gets Service Changed")
    func aMissedChange() throws {
        var h = try ServerHarness()
        h.encrypt(h.a)
        #expect(h.send("12 17 00 01 00") == "13")
        #expect(h.send("12 09 00 02 00") == "13")
        let due = try Self.backAfterAChange(&h)
        #expect(due, "Service Changed is due")
        #expect(h.server.isChangeAware(h.a) == false)
        // Only Service Changed's configuration survives: 0x0017 is another attribute now.
        #expect(h.server.bondedState(of: h.a)?.configurations == [0x0009: 0x0002])
        var out: [UInt8] = []
        try h.server.serviceChangedIndication(to: h.a, now: 0) { out = Array($0) }
        #expect(out == bytes("1D 08 00 01 00 FF FF"))
        #expect(h.send("1E") == nil)
        #expect(h.server.isChangeAware(h.a) == true)
    }

    @Test func whatTheClientWroteOnThisConnectionWinsAndJunkHandlesAreIgnored() throws {
        var h = try ServerHarness()
        let kept = ATTBondedClientState(databaseHash: h.server.table.hash,
                                        configurations: [0x0017: 0x0003, 0x0011: 0x0002, 0x0016: 0x0001, 0x7777: 0x0001],
                                        serviceChanged: 0, features: [], changeAware: true)
        #expect(h.send("12 17 00 00 00") == "13")   // the client turned it off before encrypting
        let due = h.server.restore(h.a, kept)
        #expect(!due)
        // 0x0016 is a value and 0x7777 does not exist: neither is a CCCD; the bits are cut to notify|indicate.
        #expect(h.server.bondedState(of: h.a)?.configurations == [0x0011: 0x0002])
        #expect(h.server.configuration(of: h.a, valueHandle: 0x0010) == .indicate)
    }
}

/// Signed Write Command (Core Vol 3 Part F §3.4.5.4, Part G §4.9.2, Part H §2.4.5).
@Suite struct SignedWriteTests {
    let csrk: [UInt8] = [0x61, 0x1B, 0x64, 0xEB, 0xFB, 0xCD, 0x1F, 0xD3, 0x72, 0xEC, 0x91, 0x96, 0xDF, 0x42, 0x5E, 0x50]
    let client = ATTServerClientID(rawValue: 1)

    /// 0x0003 takes signed writes (and needs encryption to write); 0x0005 takes plain writes only.
    func server(key: Bool = true, lastCounter: UInt32? = nil) throws -> ATTServer {
        var s = ATTServer(table: try GATTAttributeTable(services: [
            GATTLocalService(uuid: BluetoothUUID(0x181A), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A6F), properties: [.read, .authenticatedSignedWrites],
                                        permissions: [.readable, .writeable, .writeEncryptionRequired], value: .stored([0, 0])),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A6E), properties: [.read, .write], value: .stored([0, 0])),
            ]),
        ]))
        s.connect(client)
        if key {
            s.setSigningKey(ATTSigningKey(csrk: csrk, lastCounter: lastCounter,
                                          security: LinkSecurity(encrypted: true, keySize: 16, authenticated: false,
                                                                 secureConnections: true, bonded: true)), for: client)
        }
        return s
    }

    func signed(_ handle: UInt16, _ value: [UInt8], counter: UInt32) throws -> [UInt8] {
        let m = [0xD2, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
        return m + (try SecurityFunctions.signature(csrk: csrk, message: m, signCounter: counter))
    }

    func send(_ s: inout ATTServer, _ pdu: [UInt8]) -> [ATTServerEvent] {
        pdu.withUnsafeBytes { b in s.receive(from: client, pdu: b, now: 0) { _ in Issue.record("a command got a response") } }
    }

    func value(_ s: ATTServer, _ handle: UInt16) -> [UInt8]? {
        s.table.index(of: handle).map { s.table.attributes[$0].value }
    }

    @Test func aVerifiedSignatureWritesWithTheBondsStrength() throws {
        var s = try server()
        let events = send(&s, try signed(0x0003, [0x13, 0x37], counter: 1))
        #expect(events == [.signCounterAdvanced(client, 1), .wrote(client, handle: 0x0003, value: [0x13, 0x37], withResponse: false)])
        #expect(value(s, 0x0003) == [0x13, 0x37], "written though the link is not encrypted: the signature stands for the bond")
    }

    @Test func replayedOrOlderCountersAreRefused() throws {
        var s = try server(lastCounter: 5)
        for counter: UInt32 in [5, 4, 0] {
            let e = send(&s, try signed(0x0003, [9, 9], counter: counter))
            guard case .peerFault(_, let why)? = e.first, e.count == 1 else { Issue.record("\(e)"); continue }
            #expect(why.contains("replayed"))
        }
        #expect(send(&s, try signed(0x0003, [1, 1], counter: 6)).count == 2)
        let again = send(&s, try signed(0x0003, [2, 2], counter: 6))
        #expect(again.count == 1 && value(s, 0x0003) == [1, 1], "the same PDU twice is a replay")
    }

    @Test func aBadSignatureNoKeyOrAPlainCharacteristicIsDropped() throws {
        var s = try server()
        var tampered = try signed(0x0003, [0x13, 0x37], counter: 1)
        tampered[3] ^= 1
        var e = send(&s, tampered)
        #expect(e.count == 1 && value(s, 0x0003) == [0, 0])
        if case .peerFault(_, let why)? = e.first { #expect(why.contains("does not verify")) }
        // The tampered one did not use counter 1 up.
        #expect(send(&s, try signed(0x0003, [0x13, 0x37], counter: 1)).count == 2)
        e = send(&s, try signed(0x0005, [1, 2], counter: 2))
        #expect(e.first == .signCounterAdvanced(client, 2) && value(s, 0x0005) == [0, 0])
        if case .peerFault(_, let why)? = e.last { #expect(why.contains("signed writes")) }
        var unkeyed = try server(key: false)
        e = send(&unkeyed, try signed(0x0003, [1], counter: 1))
        if case .peerFault(_, let why)? = e.first { #expect(why.contains("no CSRK")) } else { Issue.record("\(e)") }
        // Too short for a signature: malformed, dropped.
        #expect(send(&s, [0xD2, 0x03, 0x00, 1, 2, 3]).count == 1)
    }
}
