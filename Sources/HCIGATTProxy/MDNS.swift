// The proxy's mDNS responder (RFC 6762, DNS-SD RFC 6763): Home Assistant finds ESPHome
// devices by browsing `_esphomelib._tcp.local`, and minimal images have no avahi. Sans-I/O:
// a query in, the answer out; announcements and the goodbye are messages too. Only what a
// responder for one service needs: no probing for conflicts, no known-answer suppression.

/// A DNS message that did not parse (it is ignored: anything may be on the multicast group).
struct DNSError: Error, Sendable, Equatable {
    var offset: Int
    var reason: String
}

/// The questions of a DNS query, read with bounds checks and a cap on compression jumps.
struct DNSQuery: Sendable, Equatable {
    struct Question: Sendable, Equatable {
        /// The name's labels, lowercased (names compare without case).
        var labels: [String]
        var type: UInt16
        /// The top bit of the class: the asker wants a unicast answer (QU).
        var unicastResponse: Bool
    }

    var id: UInt16
    var questions: [Question]

    /// Parses `bytes`; responses (QR set) and messages with no questions come back nil.
    static func parse(_ bytes: [UInt8]) throws(DNSError) -> DNSQuery? {
        guard bytes.count >= 12 else { throw DNSError(offset: 0, reason: "shorter than a header") }
        func u16(_ i: Int) -> UInt16 { UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) }
        let flags = u16(2)
        guard flags & 0x8000 == 0 else { return nil }  // a response
        let count = Int(u16(4))
        guard count > 0 else { return nil }
        var i = 12
        var questions: [Question] = []
        for _ in 0 ..< min(count, 64) {
            let labels = try readName(bytes, &i)
            guard bytes.count - i >= 4 else { throw DNSError(offset: i, reason: "question ends early") }
            questions.append(Question(labels: labels, type: u16(i), unicastResponse: u16(i + 2) & 0x8000 != 0))
            i += 4
        }
        return DNSQuery(id: u16(0), questions: questions)
    }

    static func readName(_ bytes: [UInt8], _ i: inout Int) throws(DNSError) -> [String] {
        var labels: [String] = []
        var p = i
        var jumped = false
        var jumps = 0
        var length = 0
        while true {
            guard p < bytes.count else { throw DNSError(offset: p, reason: "name runs past the end") }
            let n = Int(bytes[p])
            if n == 0 {
                p += 1
                break
            }
            if n & 0xC0 == 0xC0 {
                guard p + 1 < bytes.count else { throw DNSError(offset: p, reason: "pointer runs past the end") }
                jumps += 1
                guard jumps <= 16 else { throw DNSError(offset: p, reason: "compression loop") }
                let target = (n & 0x3F) << 8 | Int(bytes[p + 1])
                if !jumped { i = p + 2 }
                jumped = true
                guard target < p else { throw DNSError(offset: p, reason: "pointer forward") }
                p = target
                continue
            }
            guard n & 0xC0 == 0 else { throw DNSError(offset: p, reason: "label type \(n >> 6)") }
            guard p + 1 + n <= bytes.count else { throw DNSError(offset: p, reason: "label runs past the end") }
            length += n + 1
            guard length <= 255 else { throw DNSError(offset: p, reason: "name longer than 255") }
            labels.append(String(decoding: bytes[(p + 1) ..< (p + 1 + n)], as: UTF8.self).lowercased())
            p += 1 + n
        }
        if !jumped { i = p }
        return labels
    }
}

/// What the proxy announces: one instance of `_esphomelib._tcp`.
struct MDNSService: Sendable, Equatable {
    var instance: String
    var hostName: String
    var port: UInt16
    /// TXT entries, "key=value", in order.
    var txt: [String]
    var ttl: UInt32 = 120
    var shareTTL: UInt32 = 4500

    init(instance: String, hostName: String, port: UInt16, txt: [String]) {
        self.instance = instance
        self.hostName = hostName
        self.port = port
        self.txt = txt
    }

    static let serviceType = ["_esphomelib", "_tcp", "local"]
    static let enumeration = ["_services", "_dns-sd", "_udp", "local"]
    var instanceName: [String] { [instance] + Self.serviceType }
    var host: [String] { [hostName, "local"] }
}

/// Answers queries for one service and builds its announcements.
struct MDNSResponder: Sendable {
    var service: MDNSService

    init(service: MDNSService) { self.service = service }

    static let typeA: UInt16 = 1, typePTR: UInt16 = 12, typeTXT: UInt16 = 16, typeAAAA: UInt16 = 28, typeSRV: UInt16 = 33, typeANY: UInt16 = 255

    /// The answer to `query` given our addresses now (4 bytes each); nil when nothing asked
    /// is ours. `unicast`: answer the asker alone (it asked so, or is not an mDNS port).
    func answer(_ query: DNSQuery, addresses: [[UInt8]], legacy: Bool) -> (message: [UInt8], unicast: Bool)? {
        var answers: [Record] = []
        var additional: [Record] = []
        var unicast = legacy
        func lower(_ l: [String]) -> [String] { l.map { $0.lowercased() } }
        for q in query.questions {
            let any = q.type == Self.typeANY
            var matched = true
            switch q.labels {
            case lower(MDNSService.serviceType) where q.type == Self.typePTR || any:
                answers.append(ptr())
                additional += [srv(), txt()] + a(addresses)
            case lower(MDNSService.enumeration) where q.type == Self.typePTR || any:
                answers.append(Record(name: MDNSService.enumeration, type: Self.typePTR, unique: false, ttl: service.shareTTL,
                                      data: .name(MDNSService.serviceType)))
            case lower(service.instanceName):
                if q.type == Self.typeSRV || any { answers.append(srv()); additional += a(addresses) }
                if q.type == Self.typeTXT || any { answers.append(txt()) }
                matched = q.type == Self.typeSRV || q.type == Self.typeTXT || any
            case lower(service.host):
                if q.type == Self.typeA || any { answers += a(addresses) }
                matched = q.type == Self.typeA || any
            default:
                matched = false
            }
            if matched, q.unicastResponse { unicast = true }
        }
        guard !answers.isEmpty else { return nil }
        additional.removeAll { r in answers.contains(r) }
        // A legacy resolver gets its id and its questions back, and no cache-flush bits
        // (RFC 6762 §6.7).
        return (Self.message(id: legacy ? query.id : 0, questions: legacy ? query.questions : [], answers: answers,
                             additional: additional, cacheFlush: !legacy), unicast)
    }

    /// The unsolicited announcement (RFC 6762 §8.3), or with `goodbye` the same records at
    /// TTL 0 (§10.1).
    func announcement(addresses: [[UInt8]], goodbye: Bool = false) -> [UInt8] {
        var records = [ptr(), srv(), txt()] + a(addresses)
        if goodbye { for i in records.indices { records[i].ttl = 0 } }
        return Self.message(id: 0, questions: [], answers: records, additional: [], cacheFlush: true)
    }

    // MARK: Records

    struct Record: Equatable {
        enum Data: Equatable {
            case name([String])
            case srv(port: UInt16, target: [String])
            case txt([String])
            case bytes([UInt8])
        }
        var name: [String]
        var type: UInt16
        /// Unique records carry the cache-flush bit (§10.2); shared ones (PTR) do not.
        var unique: Bool
        var ttl: UInt32
        var data: Data
    }

    func ptr() -> Record { Record(name: MDNSService.serviceType, type: Self.typePTR, unique: false, ttl: service.shareTTL, data: .name(service.instanceName)) }
    func srv() -> Record { Record(name: service.instanceName, type: Self.typeSRV, unique: true, ttl: service.ttl, data: .srv(port: service.port, target: service.host)) }
    func txt() -> Record { Record(name: service.instanceName, type: Self.typeTXT, unique: true, ttl: service.shareTTL, data: .txt(service.txt)) }
    func a(_ addresses: [[UInt8]]) -> [Record] {
        addresses.filter { $0.count == 4 }.map { Record(name: service.host, type: Self.typeA, unique: true, ttl: service.ttl, data: .bytes($0)) }
    }

    static func message(id: UInt16, questions: [DNSQuery.Question], answers: [Record], additional: [Record],
                        cacheFlush: Bool) -> [UInt8] {
        var out: [UInt8] = []
        func u16(_ v: UInt16) { out += [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }
        func u32(_ v: UInt32) { out += [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
        // Names written whole (no compression): a few hundred bytes in all.
        func name(_ labels: [String], into o: inout [UInt8]) {
            for l in labels {
                let b = Array(l.utf8.prefix(63))
                o.append(UInt8(b.count))
                o += b
            }
            o.append(0)
        }
        u16(id)
        u16(0x8400)  // a response, authoritative
        u16(UInt16(questions.count))
        u16(UInt16(answers.count))
        u16(0)
        u16(UInt16(additional.count))
        for q in questions {
            name(q.labels, into: &out)
            u16(q.type)
            u16(0x0001)
        }
        for r in answers + additional {
            name(r.name, into: &out)
            u16(r.type)
            u16(r.unique && cacheFlush ? 0x8001 : 0x0001)
            u32(r.ttl)
            var data: [UInt8] = []
            switch r.data {
            case .name(let n): name(n, into: &data)
            case .srv(let port, let target):
                data += [0, 0, 0, 0, UInt8(port >> 8), UInt8(truncatingIfNeeded: port)]
                name(target, into: &data)
            case .txt(let entries):
                for e in entries {
                    let b = Array(e.utf8.prefix(255))
                    data.append(UInt8(b.count))
                    data += b
                }
                if entries.isEmpty { data.append(0) }
            case .bytes(let b): data = b
            }
            u16(UInt16(data.count))
            out += data
        }
        return out
    }
}
