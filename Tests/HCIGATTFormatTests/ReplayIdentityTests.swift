import BluetoothHost
import BluetoothSecurity
import BluetoothWire
import HCIGATTFormat
import Testing

/// `replay --bond-dir`: a bonded peer's resolvable private address is shown with its
/// identity, as the live scan shows it; other private addresses are not.
@Suite struct ReplayIdentityTests {
    func capture(_ addresses: [LEAddress]) throws -> [UInt8] {
        var file = [UInt8](repeating: 0, count: 4096)
        let n = try file.withUnsafeMutableBytes { buf throws -> Int in
            var w = ByteWriter(buf)
            try BTSnoop.encodeFileHeader(into: &w)
            for (i, a) in addresses.enumerated() {
                let report = LEAdvertisingReportEvent.Owned.Report(eventType: .advNonconnInd, address: a,
                                                                   data: [0x02, 0x01, 0x06], rssi: -40)
                let h4 = [H4PacketType.event.rawValue] + (try LEAdvertisingReportEvent.Owned([report]).encoded())
                try h4.withUnsafeBytes { p in
                    try BTSnoop.encodeRecord(p, flags: BTSnoopRecordFlags(.event, received: true),
                                             timestamp: BTSnoop.timestamp(unixMicroseconds: 1_700_000_000_000_000 + Int64(i)),
                                             into: &w)
                }
            }
            return w.count
        }
        return Array(file[0 ..< n])
    }

    /// An address the controller resolved itself (Public/Random Identity Address types)
    /// is its own identity, with no bond needed, as in the live scan.
    @Test func controllerResolvedAddressesAreTheirIdentity() throws {
        let file = try capture([LEAddress(BluetoothAddress(rawValue: 0x00_1B_DC_0A_0B_0C), type: .publicIdentity),
                                LEAddress(BluetoothAddress(rawValue: 0xC1_1B_DC_0A_0B_0C), type: .randomIdentity)])
        var r = CaptureReplay(configuration: ScanConfiguration(), json: true, packets: false)
        file.withUnsafeBytes { buf in
            guard var reader = try? BTSnoopReader(buf) else { Issue.record("not a capture"); return }
            while let record = try? reader.next() { r.record(record) }
        }
        r.finish()
        let lines = r.writer.out.string.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.contains("\"identity\":\"00:1B:DC:0A:0B:0C\",\"identity_type\":\"public\"") == true)
        #expect(lines.last?.contains("\"identity\":\"C1:1B:DC:0A:0B:0C\",\"identity_type\":\"random\"") == true)
    }

    @Test func bondedPrivateAddressesShowTheirIdentity() throws {
        let irk: UInt128 = 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF
        let identity = LEAddress(BluetoothAddress(rawValue: 0x00_1B_DC_01_02_03), type: .public)
        let bonded = LEAddress(try ResolvablePrivateAddress.make(irk: irk, random: 0x12_3456), type: .random)
        let stranger = LEAddress(try ResolvablePrivateAddress.make(irk: irk ^ 1, random: 0x12_3456), type: .random)
        let file = try capture([bonded, stranger, bonded])
        for json in [true, false] {
            var r = CaptureReplay(configuration: ScanConfiguration(), json: json, packets: false,
                                  resolving: [AddressResolver.Entry(irk: irk, identity: identity)])
            file.withUnsafeBytes { buf in
                guard var reader = try? BTSnoopReader(buf) else { Issue.record("not a capture"); return }
                while let record = try? reader.next() { r.record(record) }
            }
            r.finish()
            let lines = r.writer.out.string.split(separator: "\n")
            #expect(lines.count == 2)  // the bonded device once, the stranger once
            let first = lines.first.map(String.init) ?? ""
            let second = lines.dropFirst().first.map(String.init) ?? ""
            if json {
                #expect(first.contains("\"identity\":\"00:1B:DC:01:02:03\",\"identity_type\":\"public\""))
            } else {
                #expect(first.contains("identity 00:1B:DC:01:02:03 (public)"))
            }
            #expect(!second.contains("identity"))
        }
    }
}

/// `hcigatt replay` formats scan results on a second thread: the replay keeps the lines
/// (``CaptureReplay/takeLines(_:)``) and another formatter writes them. The bytes and
/// counts must be those of the replay writing them itself, taken in any batch size.
@Suite struct DeferredReplayLinesTests {
    @Test func linesFormattedElsewhereAreTheSameBytes() throws {
        let irk: UInt128 = 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF
        let identity = LEAddress(BluetoothAddress(rawValue: 0x00_1B_DC_01_02_03), type: .public)
        let bonded = LEAddress(try ResolvablePrivateAddress.make(irk: irk, random: 0x12_3456), type: .random)
        let others = (0 ..< 5).map { LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_10 + UInt64($0)), type: .random) }
        let file = try ReplayIdentityTests().capture([bonded] + others + [bonded, others[0], others[3]] + others)
        let keys = [AddressResolver.Entry(irk: irk, identity: identity)]
        func run(_ r: inout CaptureReplay) {
            file.withUnsafeBytes { buf in
                guard var reader = try? BTSnoopReader(buf) else { Issue.record("not a capture"); return }
                while let record = try? reader.next() { r.record(record) }
            }
            r.finish()
        }
        for json in [true, false] {
            for duplicates in [false, true] {
                var c = ScanConfiguration()
                c.reportDuplicates = duplicates
                var direct = CaptureReplay(configuration: c, json: json, packets: false, resolving: keys)
                run(&direct)
                for batch in [1, 3, 100] {
                    var deferred = CaptureReplay(configuration: c, json: json, packets: false, resolving: keys,
                                                 defersLines: true)
                    var formatter = deferred.lineFormatter()
                    var writer = FieldWriter(format: json ? .json : .text, out: OutputBuffer())
                    var lines: [ScanLine] = []
                    file.withUnsafeBytes { buf in
                        guard var reader = try? BTSnoopReader(buf) else { return }
                        while let record = try? reader.next() {
                            deferred.record(record)
                            guard deferred.pendingLineCount >= batch else { continue }
                            deferred.takeLines(&lines)
                            for l in lines { formatter.write(l.device, isNew: l.isNew, into: &writer) }
                        }
                    }
                    deferred.finish()
                    deferred.takeLines(&lines)
                    for l in lines { formatter.write(l.device, isNew: l.isNew, into: &writer) }
                    #expect(deferred.writer.out.count == 0, "nothing written by the replay itself")
                    #expect(writer.out.string == direct.writer.out.string, "json \(json), duplicates \(duplicates), batch \(batch)")
                    #expect(deferred.lines == direct.lines && deferred.devices == direct.devices)
                    #expect(direct.devices == 6 && direct.lines == (duplicates ? 14 : 6))
                }
            }
        }
    }
}
