import BluetoothHost
import BluetoothSecurity
import BluetoothWire
#if canImport(Glibc)
import Glibc
#endif

/// Captures of the traffic shapes `replay` meets (issue 26), written as btsnoop files for
/// Benchmarks/replay-vs-btmon and measured by the instruction cases. Every shape is
/// deterministic (a fixed generator), 10 000 reports a second of capture time, and starts
/// as a scanning host does: LE Set Scan Parameters (active) and LE Set Scan Enable, each
/// answered, so `replay` and btmon both see an active scan.
enum CaptureShape: String, CaseIterable {
    /// Distinct non-connectable advertisers, non-resolvable addresses (the first benchmark).
    case nonconnectable
    /// Distinct scannable advertisers (ADV_IND) of every address kind with name, 16-bit
    /// UUIDs and Apple data; nine in ten answer with a scan response one to four reports
    /// later, the rest never (held until the wait ends).
    case scannable
    /// Extended reports from distinct advertisers: a third fragmented over two or three
    /// reports (data up to 500 bytes), legacy PDUs in extended reports, 1M/2M/Coded.
    case extended
    /// Legacy events of three reports each (controllers batch them), distinct devices.
    case multireport
    /// A busy place: 300 devices repeating, a third scannable with scan responses, RPAs,
    /// a quarter in extended reports, two-report events, values changing now and then.
    case crowd
    /// One connection: discovery, subscriptions and then notifications of measurements
    /// (with the Number Of Completed Packets events of the writes).
    case gatt
    /// Phones advertising from resolvable private addresses: 400, one in twenty bonded
    /// (their IRKs in the bonds `--write-bonds` writes, so `replay --bond-dir` shows their
    /// identities), each taking a new address every 20 000 reports (2 s of capture; real
    /// phones wait 15 minutes: this is a crowd passing by). The unbonded phones' new
    /// addresses are each checked against all twenty IRKs.
    case bonded

    var summary: String {
        switch self {
        case .nonconnectable: "distinct non-connectable, NRPAs"
        case .scannable: "distinct scannable + scan responses, every address kind"
        case .extended: "distinct extended, a third fragmented"
        case .multireport: "distinct, three reports an event"
        case .crowd: "300 devices repeating (busy place)"
        case .gatt: "one connection, GATT discovery + notifications"
        case .bonded: "400 phones on rotating RPAs, 20 bonded (IRKs)"
        }
    }

    /// A capture of about `reports` advertising reports (gatt: ACL packets).
    func capture(reports: Int) -> [UInt8] {
        if self == .nonconnectable { return ScanPipeline.capture(devices: reports, reports: reports) }
        var w = CaptureWriter()
        w.startActiveScan()
        var rng = ShapeRandom(seed: 0x5EED &+ UInt64(rawValue.utf8.count))
        switch self {
        case .nonconnectable: break
        case .scannable: Self.scannable(&w, &rng, reports)
        case .extended: Self.extended(&w, &rng, reports)
        case .multireport: Self.multireport(&w, &rng, reports)
        case .crowd: Self.crowd(&w, &rng, reports)
        case .gatt: Self.gatt(&w, &rng, reports)
        case .bonded: Self.bonded(&w, &rng, reports)
        }
        return w.bytes
    }

    // MARK: Shapes

    typealias Legacy = LEAdvertisingReportEvent.Owned.Report
    typealias Extended = LEExtendedAdvertisingReportEvent.Owned.Report

    /// Address kinds in turn: public, random static, non-resolvable, resolvable (Core Vol 6
    /// Part B §1.3: the two top bits of a random address say which).
    static func address(_ n: Int, _ rng: inout ShapeRandom) -> LEAddress {
        let low = UInt64(n) & 0x00FF_FFFF | (rng.next() & 0xFF_FF00_0000)
        switch n % 4 {
        case 0: return LEAddress(BluetoothAddress(rawValue: 0x00_1A_7D_00_0000 | (low & 0xFF_FFFF)), type: .public)
        case 1: return LEAddress(BluetoothAddress(rawValue: 0xC000_0000_0000 | low), type: .random)
        case 2: return LEAddress(BluetoothAddress(rawValue: 0x0000_0000_0000 | low), type: .random)
        default: return LEAddress(BluetoothAddress(rawValue: 0x4000_0000_0000 | low), type: .random)
        }
    }

    /// Flags, a name with the device's number, 16-bit UUIDs and Apple manufacturer data.
    static func advertisingData(_ n: Int, prefix: String = "Tag") -> [UInt8] {
        let name = Array("\(prefix)-\(n)".utf8)
        return [0x02, 0x01, 0x06, UInt8(name.count + 1), 0x09] + name
            + [0x05, 0x03, 0x0F, 0x18, 0x0A, 0x18, 0x07, 0xFF, 0x4C, 0x00, 0x10, 0x02, UInt8(n & 0xFF), 0x04]
    }

    /// A scan response: 128-bit service UUID and TX Power Level.
    static func scanResponseData(_ n: Int) -> [UInt8] {
        [0x11, 0x07] + (0 ..< 16).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ n) } + [0x02, 0x0A, 0xF4]
    }

    static func scannable(_ w: inout CaptureWriter, _ rng: inout ShapeRandom, _ reports: Int) {
        // Scan responses waiting to be sent: (report count when due, device).
        var pending: [(due: Int, n: Int, address: LEAddress)] = []
        var n = 0
        while w.reports < reports {
            if let first = pending.first, first.due <= w.reports {
                pending.removeFirst()
                w.legacy([Legacy(eventType: .scanRsp, address: first.address, data: scanResponseData(first.n),
                                 rssi: -50 - Int8(first.n % 40))])
                continue
            }
            let a = address(n, &rng)
            w.legacy([Legacy(eventType: .advInd, address: a, data: advertisingData(n), rssi: -50 - Int8(n % 40))])
            if rng.next() % 10 != 0 { pending.append((w.reports + 1 + Int(rng.next() % 4), n, a)) }
            n += 1
        }
    }

    static func extended(_ w: inout CaptureWriter, _ rng: inout ShapeRandom, _ reports: Int) {
        var n = 0
        let phys: [LEPHY] = [.le1M, .le2M, .leCoded]
        while w.reports < reports {
            let a = address(n, &rng)
            let sid = UInt8(n % 16)
            if n % 3 == 0 {
                // A long advertisement over two or three reports (Core Vol 4 Part E
                // §7.7.65.13: Data_Status 1 until the last).
                var data = advertisingData(n, prefix: "Long")
                while data.count < 300 + n % 200 { data += [0x1D, 0xFF, 0x59, 0x00] + Array(repeating: UInt8(n & 0xFF), count: 27) }
                let chunks = stride(from: 0, to: data.count, by: 229).map { Array(data[$0 ..< min($0 + 229, data.count)]) }
                for (i, chunk) in chunks.enumerated() {
                    let last = i == chunks.count - 1
                    let type = LEExtendedAdvertisingEventType(connectable: false, scannable: false,
                                                              dataStatus: last ? .complete : .incompleteMoreData)
                    w.extended([Extended(eventType: type, address: a, primaryPHY: .le1M, secondaryPHY: phys[n % 3],
                                         advertisingSID: sid, txPower: 4, rssi: -60 - Int8(n % 30), data: chunk)])
                }
            } else if n % 3 == 1 {
                // A legacy PDU reported in an extended report.
                let type = LEExtendedAdvertisingEventType(connectable: true, scannable: true, legacy: true)
                w.extended([Extended(eventType: type, address: a, rssi: -60 - Int8(n % 30), data: advertisingData(n))])
            } else {
                let type = LEExtendedAdvertisingEventType(connectable: true, dataStatus: .complete)
                w.extended([Extended(eventType: type, address: a, primaryPHY: .le1M, secondaryPHY: .le2M,
                                     advertisingSID: sid, rssi: -60 - Int8(n % 30), data: advertisingData(n, prefix: "Ext"))])
            }
            n += 1
        }
    }

    static func multireport(_ w: inout CaptureWriter, _ rng: inout ShapeRandom, _ reports: Int) {
        var n = 0
        while w.reports < reports {
            // 3 reports of up to 43 + 10 bytes each: within the event's 255 bytes.
            let batch = (0 ..< 3).map { i -> Legacy in
                Legacy(eventType: i == 1 ? .advScanInd : .advNonconnInd, address: address(n + i, &rng),
                       data: advertisingData(n + i, prefix: "M"), rssi: -45 - Int8((n + i) % 50))
            }
            w.legacy(batch)
            n += 3
        }
    }

    static func crowd(_ w: inout CaptureWriter, _ rng: inout ShapeRandom, _ reports: Int) {
        let devices = 300
        let addresses = (0 ..< devices).map { address($0, &rng) }
        var counters = [UInt8](repeating: 0, count: devices)
        while w.reports < reports {
            let n = Int(rng.next() % UInt64(devices))
            let rssi = -40 - Int8(rng.next() % 50)
            // A value changes in one report of twenty (a sensor's reading, a counter).
            if rng.next() % 20 == 0 { counters[n] &+= 1 }
            var data = advertisingData(n, prefix: "Crowd")
            data[data.count - 1] = counters[n]
            switch n % 4 {
            case 0:
                // Scannable, answered at once.
                w.legacy([Legacy(eventType: .advInd, address: addresses[n], data: data, rssi: rssi)])
                w.legacy([Legacy(eventType: .scanRsp, address: addresses[n], data: scanResponseData(n), rssi: rssi)])
            case 1:
                let type = LEExtendedAdvertisingEventType(connectable: true, dataStatus: .complete)
                w.extended([Extended(eventType: type, address: addresses[n], secondaryPHY: .le2M, advertisingSID: 1,
                                     rssi: rssi, data: data)])
            case 2:
                // Two devices in one event.
                let m = (n + 4) % devices
                w.legacy([Legacy(eventType: .advNonconnInd, address: addresses[n], data: data, rssi: rssi),
                          Legacy(eventType: .advNonconnInd, address: addresses[m], data: advertisingData(m, prefix: "Crowd"),
                                 rssi: rssi - 3)])
            default:
                w.legacy([Legacy(eventType: .advNonconnInd, address: addresses[n], data: data, rssi: rssi)])
            }
        }
    }

    /// Phones in the bonded shape (every twentieth bonded).
    static let phones = 400

    /// Phone `k`'s identity resolving key and public identity (every twentieth is bonded).
    static func phone(_ k: Int) -> (irk: UInt128, identity: LEAddress) {
        let irk = UInt128(0x1F2E_3D4C_5B6A_7988_0000_0000_0000_0000) | UInt128(k) &* 0x9E37_79B9_7F4A_7C15
        return (irk, LEAddress(BluetoothAddress(rawValue: 0x00_1B_DC_00_0000 | UInt64(k)), type: .public))
    }

    /// The bonds of the bonded shape's phones (identity, IRK).
    static func bondedEntries() -> [AddressResolver.Entry] {
        stride(from: 0, to: phones, by: 20).map { k in
            let p = phone(k)
            return AddressResolver.Entry(irk: p.irk, identity: p.identity)
        }
    }

    static func bonded(_ w: inout CaptureWriter, _ rng: inout ShapeRandom, _ reports: Int) {
        var addresses: [Int: (epoch: Int, address: LEAddress)] = [:]
        while w.reports < reports {
            let k = Int(rng.next() % UInt64(phones))
            let epoch = (w.reports + k * 50) / 20000  // phones rotate at different moments
            var a = addresses[k]
            if a?.epoch != epoch {
                let prand = UInt32(truncatingIfNeeded: rng.next())
                let raw = (try? ResolvablePrivateAddress.make(irk: phone(k).irk, random: prand)) ?? BluetoothAddress(rawValue: 0x4000_0000_0000)
                a = (epoch, LEAddress(raw, type: .random))
                addresses[k] = a
            }
            let address = a?.address ?? LEAddress(BluetoothAddress(rawValue: 0x4000_0000_0000), type: .random)
            // Flags and Apple's Nearby data, which changes with the address.
            let data: [UInt8] = [0x02, 0x01, 0x1A, 0x0A, 0xFF, 0x4C, 0x00, 0x10, 0x05, 0x01, 0x18,
                                 UInt8(truncatingIfNeeded: epoch), UInt8(truncatingIfNeeded: k), 0x07]
            w.legacy([Legacy(eventType: .advInd, address: address, data: data, rssi: -45 - Int8(k % 50))])
        }
    }

    /// Writes the bonded shape's bonds into `directory` (as `hcigatt pair` keeps them).
    static func writeBonds(_ directory: String) throws {
        let store = BondStore(directory: directory)
        for k in stride(from: 0, to: phones, by: 20) {
            let p = phone(k)
            let result = SMPPairingResult(method: .justWorks, secureConnections: true, authenticated: false, keySize: 16,
                                          bonded: true, peerLTK: SMPLongTermKey(key: p.irk ^ 0xA5),
                                          peerIdentityResolvingKey: p.irk, peerIdentityAddress: p.identity)
            try store.save(Bond(identity: p.identity, result: result, created: 1_700_000_000))
        }
    }

    /// A central's session with a thermometer: connect, MTU, discovery, two subscriptions,
    /// then notifications (temperature and battery) with a read now and then.
    static func gatt(_ w: inout CaptureWriter, _ rng: inout ShapeRandom, _ packets: Int) {
        // LE Connection Complete: handle 0x0040, central, peer random C0:..:01, 30 ms.
        w.event([0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC0,
                 0x18, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00])
        let requests: [([UInt8], [UInt8])] = [
            ([0x02, 0xF7, 0x00], [0x03, 0xF7, 0x00]),  // Exchange MTU 247
            // Read By Group Type (primary services): GAP, Health Thermometer, Battery.
            ([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],
             [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18, 0x06, 0x00, 0x0D, 0x00, 0x09, 0x18,
              0x0E, 0x00, 0x11, 0x00, 0x0F, 0x18]),
            ([0x10, 0x12, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x01, 0x10, 0x12, 0x00, 0x0A]),
            // Read By Type (characteristics) of the thermometer: 2A1C (indicate), 2A1D.
            ([0x08, 0x06, 0x00, 0x0D, 0x00, 0x03, 0x28],
             [0x09, 0x07, 0x07, 0x00, 0x20, 0x08, 0x00, 0x1C, 0x2A, 0x0A, 0x00, 0x02, 0x0B, 0x00, 0x1D, 0x2A]),
            // Battery Level 2A19 (read, notify).
            ([0x08, 0x0E, 0x00, 0x11, 0x00, 0x03, 0x28], [0x09, 0x07, 0x0F, 0x00, 0x12, 0x10, 0x00, 0x19, 0x2A]),
            ([0x12, 0x09, 0x00, 0x02, 0x00], [0x13]),  // CCCD of 2A1C: indications
            ([0x12, 0x11, 0x00, 0x01, 0x00], [0x13]),  // CCCD of 2A19: notifications
        ]
        for (request, response) in requests {
            w.att(request, sent: true)
            w.att(response, sent: false)
        }
        var level: UInt8 = 100
        while w.reports < packets {
            let k = rng.next() % 10
            if k < 6 {
                // Temperature Measurement indication (°C, with time stamp) and its confirmation.
                let t = UInt16(360 + rng.next() % 20)
                w.att([0x1D, 0x08, 0x00, 0x02, UInt8(t & 0xFF), UInt8(t >> 8), 0x00, 0xFF,
                       0xEA, 0x07, 0x0C, 0x05, 0x11, 0x21, 0x05], sent: false)
                w.att([0x1E], sent: true)
            } else if k < 9 {
                if rng.next() % 8 == 0, level > 1 { level -= 1 }
                w.att([0x1B, 0x10, 0x00, level], sent: false)
            } else {
                w.att([0x0A, 0x0B, 0x00], sent: true)  // read 2A1D (Temperature Type)
                w.att([0x0B, 0x02], sent: false)
            }
        }
        // Disconnection Complete (remote user terminated).
        w.event([0x05, 0x04, 0x00, 0x40, 0x00, 0x13])
    }
}

/// Writes btsnoop records (H4 datalink), 100 µs apart.
struct CaptureWriter {
    private(set) var bytes: [UInt8] = []
    /// Advertising reports written (gatt: ACL packets).
    private(set) var reports = 0
    private var time: Int64 = 1_700_000_000_000_000
    private var scratch = [UInt8](repeating: 0, count: 1100)

    init() {
        bytes.reserveCapacity(1 << 20)
        var header = [UInt8](repeating: 0, count: BTSnoop.fileHeaderLength)
        header.withUnsafeMutableBytes { buf in
            var w = ByteWriter(buf)
            try? BTSnoop.encodeFileHeader(into: &w)
        }
        bytes += header
    }

    mutating func record(_ h4: [UInt8], _ type: H4PacketType, received: Bool) {
        time += 100
        let t = time
        let n = scratch.withUnsafeMutableBytes { buf -> Int in
            var w = ByteWriter(buf)
            do {
                try h4.withUnsafeBytes { p in
                    try BTSnoop.encodeRecord(p, flags: BTSnoopRecordFlags(type, received: received),
                                             timestamp: BTSnoop.timestamp(unixMicroseconds: t), into: &w)
                }
            } catch {
                return 0
            }
            return w.count
        }
        bytes += scratch[0 ..< n]
    }

    mutating func command(_ packet: [UInt8]) { record([H4PacketType.command.rawValue] + packet, .command, received: false) }
    mutating func event(_ packet: [UInt8]) { record([H4PacketType.event.rawValue] + packet, .event, received: true) }

    /// LE Set Scan Parameters (active, 60/30 ms) and LE Set Scan Enable, each completed.
    mutating func startActiveScan() {
        command([0x0B, 0x20, 0x07, 0x01, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00])
        event([0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00])
        command([0x0C, 0x20, 0x02, 0x01, 0x00])
        event([0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00])
    }

    mutating func legacy(_ list: [LEAdvertisingReportEvent.Owned.Report]) {
        // A shape that does not encode is a bug in the shape: say so rather than loop.
        guard let e = try? LEAdvertisingReportEvent.Owned(list).encoded() else { fatalError("shape: legacy report does not encode") }
        event(e)
        reports += list.count
    }

    mutating func extended(_ list: [LEExtendedAdvertisingReportEvent.Owned.Report]) {
        guard let e = try? LEExtendedAdvertisingReportEvent.Owned(list).encoded() else { fatalError("shape: extended report does not encode") }
        event(e)
        reports += list.count
    }

    /// An ATT PDU on handle 0x0040 (L2CAP CID 4); what the host sends is followed by the
    /// controller's Number Of Completed Packets.
    mutating func att(_ pdu: [UInt8], sent: Bool) {
        let l2cap = [UInt8(pdu.count & 0xFF), UInt8(pdu.count >> 8), 0x04, 0x00] + pdu
        let acl = [0x40, 0x20, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap
        record([H4PacketType.acl.rawValue] + acl, .acl, received: !sent)
        if sent { event([0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00]) }
        reports += 1
    }
}

/// SplitMix64: the shapes are the same on every run and machine.
struct ShapeRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
