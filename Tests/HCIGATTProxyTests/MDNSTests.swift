import Testing
@testable import HCIGATTProxy

@Suite struct MDNSTests {
    static let service = MDNSService(instance: "proxy-one", hostName: "proxy-one", port: 6053,
                                     txt: ["mac=aabbccddeeff", "api_encryption=Noise_NNpsk0_25519_ChaChaPoly_SHA256"])

    static func query(_ names: [([String], UInt16, Bool)], id: UInt16 = 0) -> [UInt8] {
        var q: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0, 0, 0, UInt8(names.count), 0, 0, 0, 0, 0, 0]
        for (labels, type, qu) in names {
            for l in labels { q.append(UInt8(l.utf8.count)); q += Array(l.utf8) }
            q += [0, UInt8(type >> 8), UInt8(type & 0xFF), qu ? 0x80 : 0, 1]
        }
        return q
    }

    @Test("A PTR query for _esphomelib._tcp gets our instance, with SRV, TXT and A as additional records")
    func browse() throws {
        let q = try #require(try DNSQuery.parse(Self.query([(["_ESPHOMELIB", "_tcp", "local"], 12, false)])))
        let (message, unicast) = try #require(MDNSResponder(service: Self.service).answer(q, addresses: [[192, 0, 2, 7]], legacy: false))
        #expect(!unicast)
        #expect(message[2] == 0x84 && message[3] == 0x00, "an authoritative response")
        #expect(message[6 ..< 8] == [0, 1] && message[10 ..< 12] == [0, 3], "one answer, SRV TXT A additional")
        #expect(message.suffix(4) == [192, 0, 2, 7])
        let text = String(decoding: message, as: UTF8.self)
        #expect(text.contains("proxy-one") && text.contains("mac=aabbccddeeff"))
    }

    @Test("Questions that are not ours get nothing; a QU question or a legacy port gets a unicast answer with its id")
    func answersAndSilence() throws {
        let responder = MDNSResponder(service: Self.service)
        let other = try #require(try DNSQuery.parse(Self.query([(["_hap", "_tcp", "local"], 12, false)])))
        #expect(responder.answer(other, addresses: [], legacy: false) == nil)
        let qu = try #require(try DNSQuery.parse(Self.query([(["proxy-one", "local"], 1, true)], id: 77)))
        let (m, unicast) = try #require(responder.answer(qu, addresses: [[10, 0, 0, 1]], legacy: false))
        #expect(unicast && m[0] == 0 && m[1] == 0)
        let (legacy, _) = try #require(responder.answer(qu, addresses: [[10, 0, 0, 1]], legacy: true))
        #expect(legacy[0] == 0 && legacy[1] == 77)
        #expect(legacy[4 ..< 6] == [0, 1], "its question echoed")
        // The A record ends both: type, class, TTL, length, address.
        #expect(Array(m.suffix(14).prefix(4)) == [0, 1, 0x80, 1], "cache-flush for mDNS")
        #expect(Array(legacy.suffix(14).prefix(4)) == [0, 1, 0, 1], "none for a legacy resolver")
    }

    @Test("The goodbye repeats the records at TTL 0")
    func goodbye() {
        let r = MDNSResponder(service: Self.service)
        let hello = r.announcement(addresses: [[10, 0, 0, 1]]), bye = r.announcement(addresses: [[10, 0, 0, 1]], goodbye: true)
        #expect(hello.count == bye.count && hello != bye)
    }

    @Test("Hostile queries: compression loops, forward pointers, names past the end, responses")
    func hostile() throws {
        var loop = Self.query([(["a"], 1, false)])
        loop.replaceSubrange(12 ..< 15, with: [0xC0, 12])  // points at itself
        #expect(throws: DNSError.self) { _ = try DNSQuery.parse(loop) }
        var forward = Self.query([(["a"], 1, false)])
        forward.replaceSubrange(12 ..< 15, with: [0xC0, 40])
        #expect(throws: DNSError.self) { _ = try DNSQuery.parse(forward) }
        #expect(throws: DNSError.self) { _ = try DNSQuery.parse(Array(Self.query([(["abc"], 1, false)]).prefix(15))) }
        var response = Self.query([(["a"], 1, false)])
        response[2] = 0x84
        #expect(try DNSQuery.parse(response) == nil)
        #expect(throws: DNSError.self) { _ = try DNSQuery.parse([0, 1, 2]) }
    }
}
