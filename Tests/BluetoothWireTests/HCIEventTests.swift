import Testing
@testable import BluetoothWire

struct UnexpectedEvent: Error { var title: String }

/// Parses `bytes` as an event and hands the (buffer-bound) value to `body`.
func withEvent<R>(_ bytes: [UInt8], _ body: (HCIEvent) throws -> R) throws -> R {
    try withBytes(bytes) { buf in try body(try HCIEvent(parsing: buf)) }
}

/// Parses and re-encodes (through the view) an event.
func reencoded(_ bytes: [UInt8]) throws -> [UInt8] {
    try withEvent(bytes) { e in try e.encoded() }
}

/// Every strict prefix of `bytes` must throw a WireError (never trap).
func expectEveryPrefixThrows(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    for n in 0..<bytes.count {
        let e = wireError(Array(bytes[0..<n])) { buf in try HCIEvent(parsing: buf) }
        #expect(e != nil, "prefix of length \(n) parsed", sourceLocation: sourceLocation)
    }
}

func commandComplete<R>(_ bytes: [UInt8], _ body: (HCICommandComplete) throws -> R) throws -> R {
    try withEvent(bytes) { e in
        guard case .commandComplete(let cc) = e else { throw UnexpectedEvent(title: e.fieldTitle) }
        return try body(cc)
    }
}

func leMeta<R>(_ bytes: [UInt8], _ body: (LEMetaEvent) throws -> R) throws -> R {
    try withEvent(bytes) { e in
        guard case .leMeta(let m) = e else { throw UnexpectedEvent(title: e.fieldTitle) }
        return try body(m)
    }
}

func field(_ fields: [Field], _ name: String) -> FieldValue? { fields.first { $0.name == name }?.value }

// Known vectors.
enum Vectors {
    static let resetComplete = h("0E 04 01 03 0C 00")
    static let readBDADDRComplete = h("0E 0A 01 09 10 00 01 E2 FD 17 72 E4")
    /// CSR8510 A10 dongle: HCI 4.0 rev 0x22BB, LMP 4.0, company 0x000A (CSR), LMP subversion 0x22BB.
    static let readLocalVersionComplete = h("0E 0C 01 01 10 00 06 BB 22 06 0A 00 BB 22")
    static let commandStatusLECreateConnection = h("0F 04 00 01 0D 20")
    static let disconnectionComplete = h("05 04 00 40 00 13")
    static let numberOfCompletedPackets = h("13 09 02 40 00 01 00 41 00 03 00")
    /// iBeacon-shaped AD: Flags + Manufacturer Specific (Apple) = 30 bytes.
    static let beaconAD = h("02 01 06 1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 00 01 00 02 C5")
    /// The benchmark vector: one legacy advertising report, 30 bytes of AD, RSSI -60.
    static let advertisingReport = h("3E 2A 02 01 00 01 E2 FD 17 72 E4 02 1E") + beaconAD + [0xC4]
    /// Two reports: ADV_IND with flags + name, and an empty SCAN_RSP with RSSI not available.
    static let advertisingReport2 = h("3E 1F 02 02")
        + h("00 00 01 02 03 04 05 06 09 02 01 06 05 09 41 42 43 44 B0")
        + h("04 01 11 22 33 44 55 C6 00 7F")
    /// LE Connection Complete: handle 0x0040, central, random peer, 30 ms, latency 0, 2 s, 500 ppm.
    static let leConnectionComplete = h("3E 13 01 00 40 00 00 01 01 E2 FD 17 72 E4 18 00 00 00 C8 00 00")
}

@Suite struct HCIEventKnownVectorTests {
    @Test func resetCommandComplete() throws {
        let (n, op, status, typed, decoded) = try commandComplete(Vectors.resetComplete) { cc in
            (cc.numHCICommandPackets, cc.commandOpcode, cc.status,
             try cc.returnParameters(as: HCIStatusReturn.self), cc.decodedReturn.value as? HCIStatusReturn)
        }
        #expect(n == 1 && op == .reset && status == .success)
        #expect(typed == HCIStatusReturn(status: .success))
        #expect(decoded == typed)
        #expect(try reencoded(Vectors.resetComplete) == Vectors.resetComplete)
        let built = try HCICommandComplete.Owned(numHCICommandPackets: 1, commandOpcode: .reset, returning: HCIStatusReturn(status: .success))
        #expect(try built.encoded() == Vectors.resetComplete)
    }

    @Test func readBDADDR() throws {
        let ret = try commandComplete(Vectors.readBDADDRComplete) { cc in try cc.returnParameters(as: HCIReadBDADDRReturn.self) }
        #expect(ret.status == .success)
        #expect(ret.bdAddr == BluetoothAddress("E4:72:17:FD:E2:01"))
        let fields = try withEvent(Vectors.readBDADDRComplete) { $0.fields }
        guard case .object(let rp)? = field(fields, "return_parameters") else { Issue.record("no return params"); return }
        #expect(field(rp, "bd_addr") == .text("E4:72:17:FD:E2:01"))
        #expect(field(fields, "command_opcode") == .named(0x1009, "HCI_Read_BD_ADDR"))
    }

    @Test func readLocalVersion() throws {
        let v = try commandComplete(Vectors.readLocalVersionComplete) { cc in
            try cc.returnParameters(as: HCIReadLocalVersionInformationReturn.self)
        }
        #expect(v == HCIReadLocalVersionInformationReturn(status: .success, hciVersion: HCICoreVersion(rawValue: 6), hciSubversion: 0x22BB,
                                                          lmpVersion: HCICoreVersion(rawValue: 6), companyIdentifier: 0x000A, lmpSubversion: 0x22BB))
        #expect(v.hciVersion.name == "4.0")
        guard case .readLocalVersionInformation(let d) = try commandComplete(Vectors.readLocalVersionComplete, { $0.decodedReturn }) else {
            Issue.record("not decoded"); return
        }
        #expect(d == v)
    }

    @Test func shortReturnParameters() throws {
        // Failed command with status only: typed decoding throws, generic parse and decodedReturn work.
        let failed = h("0E 04 01 01 10 0C")
        let (err, status, decodedStatus) = try commandComplete(failed) { cc -> (WireError?, HCIErrorCode?, HCIErrorCode?) in
            var err: WireError?
            do throws(WireError) { _ = try cc.returnParameters(as: HCIReadLocalVersionInformationReturn.self) } catch { err = error }
            guard case .status(let s) = cc.decodedReturn else { return (err, cc.status, nil) }
            return (err, cc.status, s.status)
        }
        #expect(err?.code == .truncated)
        #expect(err?.offset == 6)
        #expect(status == .commandDisallowed && decodedStatus == .commandDisallowed)
        // Success but truncated: malformed.
        let short = h("0E 06 01 01 10 00 06 BB")
        let malformed = try commandComplete(short) { cc -> Bool in
            if case .malformed(let e, _) = cc.decodedReturn { return e.code == .truncated }
            return false
        }
        #expect(malformed)
        // Trailing bytes in typed decoding.
        let long = h("0E 05 01 03 0C 00 00")
        #expect(try commandComplete(long) { cc -> WireError? in
            do throws(WireError) { _ = try cc.returnParameters(as: HCIStatusReturn.self); return nil } catch { return error }
        }?.code == .trailingBytes)
        // NOP: credits only.
        let nop = h("0E 03 05 00 00")
        let (s, isNone) = try commandComplete(nop) { cc -> (HCIErrorCode?, Bool) in
            if case .none = cc.decodedReturn { return (cc.status, true) }
            return (cc.status, false)
        }
        #expect(s == nil && isNone)
        // Unknown opcode: raw bytes.
        let vendor = h("0E 06 01 01 FC 00 AA BB")
        #expect(try commandComplete(vendor) { cc -> [UInt8]? in
            if case .unknown(let b) = cc.decodedReturn { return Array(b) }
            return nil
        } == [0x00, 0xAA, 0xBB])
    }

    @Test func commandStatus() throws {
        let cs = try withEvent(Vectors.commandStatusLECreateConnection) { e -> HCICommandStatus? in
            if case .commandStatus(let s) = e { return s }
            return nil
        }
        #expect(cs == HCICommandStatus(status: .success, numHCICommandPackets: 1, commandOpcode: .leCreateConnection))
        #expect(try encode(cs!) == Vectors.commandStatusLECreateConnection)
    }

    @Test func disconnectionComplete() throws {
        let d = try withEvent(Vectors.disconnectionComplete) { e -> HCIDisconnectionComplete? in
            if case .disconnectionComplete(let d) = e { return d }
            return nil
        }
        #expect(d == HCIDisconnectionComplete(status: .success, connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection))
        let fields = try withEvent(Vectors.disconnectionComplete) { $0.fields }
        #expect(field(fields, "reason") == .named(0x13, "Remote User Terminated Connection"))
        #expect(try withEvent(Vectors.disconnectionComplete) { $0.fieldTitle } == "HCI_Disconnection_Complete")
    }

    @Test func numberOfCompletedPackets() throws {
        let entries = try withEvent(Vectors.numberOfCompletedPackets) { e -> [HCICompletedPackets] in
            guard case .numberOfCompletedPackets(let n) = e else { return [] }
            return Array(n)
        }
        #expect(entries == [HCICompletedPackets(connectionHandle: 0x40, numCompletedPackets: 1),
                            HCICompletedPackets(connectionHandle: 0x41, numCompletedPackets: 3)])
        #expect(try HCINumberOfCompletedPackets.Owned(entries).encoded() == Vectors.numberOfCompletedPackets)
        #expect(try reencoded(Vectors.numberOfCompletedPackets) == Vectors.numberOfCompletedPackets)
    }

    @Test func encryptionChangeV1AndV2() throws {
        let v1 = h("08 04 00 40 00 01")
        let v2 = h("59 05 00 40 00 01 10")
        let e1 = try withEvent(v1) { e -> HCIEncryptionChange? in if case .encryptionChange(let c) = e { return c }; return nil }
        let e2 = try withEvent(v2) { e -> HCIEncryptionChange? in if case .encryptionChange(let c) = e { return c }; return nil }
        #expect(e1 == HCIEncryptionChange(status: .success, connectionHandle: 0x40, encryptionEnabled: .on))
        #expect(e2 == HCIEncryptionChange(status: .success, connectionHandle: 0x40, encryptionEnabled: .on, encryptionKeySize: 16))
        #expect(try encode(e1!) == v1)
        #expect(try encode(e2!) == v2)
    }

    @Test func benchmarkAdvertisingReport() throws {
        let reports = try leMeta(Vectors.advertisingReport) { m -> [LEAdvertisingReportEvent.Owned.Report] in
            guard case .advertisingReport(let e) = m else { return [] }
            var it = e.reports
            var out: [LEAdvertisingReportEvent.Owned.Report] = []
            while let r = try it.next() {
                #expect(r.rssiIfAvailable == -60)
                out.append(.init(r))
            }
            return out
        }
        #expect(reports.count == 1)
        let r = try #require(reports.first)
        #expect(r.eventType == .advInd)
        #expect(r.address == LEAddress(BluetoothAddress("02:E4:72:17:FD:E2")!, type: .random))
        #expect(r.data == Vectors.beaconAD)
        #expect(r.rssi == -60)
        #expect(try LEAdvertisingReportEvent.Owned(reports).encoded() == Vectors.advertisingReport)
        #expect(try reencoded(Vectors.advertisingReport) == Vectors.advertisingReport)
        let fields = try withEvent(Vectors.advertisingReport) { $0.fields }
        #expect(field(fields, "subevent_code") == .named(2, "HCI_LE_Advertising_Report"))
        guard case .list(let list)? = field(fields, "reports"), case .object(let rf)? = list.first else {
            Issue.record("no reports list"); return
        }
        #expect(field(rf, "data") == .bytes(Vectors.beaconAD))
        #expect(field(rf, "rssi") == .int(-60))
        #expect(field(rf, "address") == .text("02:E4:72:17:FD:E2"))
    }

    @Test func twoReportAdvertisingReport() throws {
        let reports = try leMeta(Vectors.advertisingReport2) { m -> [LEAdvertisingReportEvent.Owned.Report] in
            guard case .advertisingReport(let e) = m else { return [] }
            #expect(e.numReports == 2)
            var it = e.makeIterator()
            var out: [LEAdvertisingReportEvent.Owned.Report] = []
            while let r = try it.next() { out.append(.init(r)) }
            return out
        }
        #expect(reports == [
            .init(eventType: .advInd, address: LEAddress(BluetoothAddress("06:05:04:03:02:01")!, type: .public),
                  data: h("02 01 06 05 09 41 42 43 44"), rssi: -80),
            .init(eventType: .scanRsp, address: LEAddress(BluetoothAddress("C6:55:44:33:22:11")!, type: .random),
                  data: [], rssi: 127),
        ])
        #expect(try LEAdvertisingReportEvent.Owned(reports).encoded() == Vectors.advertisingReport2)
    }

    @Test func extendedAdvertisingReportTwoReports() throws {
        let legacyInd = LEExtendedAdvertisingEventType(connectable: true, scannable: true, legacy: true)
        #expect(legacyInd.rawValue == 0x13 && legacyInd.legacyPDUName == "ADV_IND")
        let incomplete = LEExtendedAdvertisingEventType(connectable: true, dataStatus: .incompleteMoreData)
        #expect(incomplete.rawValue == 0x21)
        let owned = LEExtendedAdvertisingReportEvent.Owned([
            .init(eventType: legacyInd, address: LEAddress(BluetoothAddress("C0:11:22:33:44:55")!, type: .random),
                  primaryPHY: .le1M, secondaryPHY: .none, advertisingSID: 0xFF, txPower: 127, rssi: -70,
                  data: h("02 01 06")),
            .init(eventType: incomplete, address: LEAddress(BluetoothAddress("00:1B:DC:01:02:03")!, type: .public),
                  primaryPHY: .leCoded, secondaryPHY: .le2M, advertisingSID: 3, txPower: -4, rssi: -90,
                  periodicAdvertisingInterval: 0x0050, data: Array(repeating: 0xAB, count: 100)),
        ])
        let bytes = try owned.encoded()
        // Hand-checked layout of the first report.
        #expect(Array(bytes[0..<30]) == h("3E 99 0D 02 13 00 01 55 44 33 22 11 C0 01 00 FF 7F BA 00 00 00 00 00 00 00 00 00 03 02 01"))
        let (back, statuses) = try leMeta(bytes) { m -> ([LEExtendedAdvertisingReportEvent.Owned.Report], [LEAdvertisingDataStatus]) in
            guard case .extendedAdvertisingReport(let e) = m else { return ([], []) }
            var it = e.reports
            var out: [LEExtendedAdvertisingReportEvent.Owned.Report] = []
            var st: [LEAdvertisingDataStatus] = []
            while let r = try it.next() {
                out.append(.init(r))
                st.append(r.eventType.dataStatus)
            }
            return (out, st)
        }
        #expect(back == owned.reports)
        #expect(statuses == [.complete, .incompleteMoreData])
        #expect(try reencoded(bytes) == bytes)
        let fields = try withEvent(bytes) { $0.fields }
        guard case .list(let list)? = field(fields, "reports"), list.count == 2, case .object(let second) = list[1],
              case .object(let et)? = field(second, "event_type") else { Issue.record("fields"); return }
        #expect(field(et, "data_status") == .named(1, "Incomplete, more data to come"))
        #expect(field(second, "tx_power") == .int(-4))
    }

    @Test func leConnectionComplete() throws {
        let c = try leMeta(Vectors.leConnectionComplete) { m -> LEConnectionComplete? in
            if case .connectionComplete(let c) = m { return c }
            return nil
        }
        #expect(c == LEConnectionComplete(status: .success, connectionHandle: 0x40, role: .central,
                                          peerAddress: LEAddress(BluetoothAddress("E4:72:17:FD:E2:01")!, type: .random),
                                          connectionInterval: 24, peripheralLatency: 0, supervisionTimeout: 200,
                                          centralClockAccuracy: LEClockAccuracy(rawValue: 0)))
        #expect(try encode(c!) == Vectors.leConnectionComplete)
    }

    @Test func enhancedConnectionCompleteV2() throws {
        let v = LEEnhancedConnectionComplete(
            status: .success, connectionHandle: 0x0001, role: .peripheral,
            peerAddress: LEAddress(BluetoothAddress("11:22:33:44:55:66")!, type: .publicIdentity),
            localResolvablePrivateAddress: BluetoothAddress("4A:00:00:00:00:01")!,
            peerResolvablePrivateAddress: BluetoothAddress("5B:00:00:00:00:02")!,
            connectionInterval: 6, peripheralLatency: 4, supervisionTimeout: 100,
            centralClockAccuracy: LEClockAccuracy(rawValue: 7),
            v2: .init(advertisingHandle: 2, syncHandle: 0xFFFF))
        let bytes = try encode(v)
        #expect(bytes.count == 2 + 34)
        #expect(Array(bytes[0..<3]) == [0x3E, 34, 0x29])
        #expect(Array(bytes.suffix(3)) == [0x02, 0xFF, 0xFF])
        let back = try leMeta(bytes) { m -> LEEnhancedConnectionComplete? in
            if case .enhancedConnectionComplete(let c) = m { return c }
            return nil
        }
        #expect(back == v)
        var v1 = v
        v1.v2 = nil
        let b1 = try encode(v1)
        #expect(b1[2] == 0x0A && b1.count == 2 + 31)
        #expect(try leMeta(b1) { m -> LEEnhancedConnectionComplete? in
            if case .enhancedConnectionComplete(let c) = m { return c }
            return nil
        } == v1)
        let title = try withEvent(bytes) { $0.fieldTitle }
        #expect(title == "HCI_LE_Enhanced_Connection_Complete [v2]")
    }

    @Test func unknownCodesAreNotErrors() throws {
        let vendor = h("FF 03 01 02 03")
        let (code, params) = try withEvent(vendor) { e -> (HCIEventCode, [UInt8]) in
            guard case .unknown(let c, let p) = e else { return (HCIEventCode(rawValue: 0), []) }
            return (c, Array(p))
        }
        #expect(code == .vendorSpecific && params == [1, 2, 3])
        #expect(try reencoded(vendor) == vendor)
        let sub = h("3E 03 7F AA BB")
        let (sc, sp) = try leMeta(sub) { m -> (LEMetaSubeventCode, [UInt8]) in
            guard case .unknown(let c, let p) = m else { return (LEMetaSubeventCode(rawValue: 0), []) }
            return (c, Array(p))
        }
        #expect(sc.rawValue == 0x7F && sp == [0xAA, 0xBB])
        #expect(try reencoded(sub) == sub)
        // An empty-parameter unknown event.
        #expect(try reencoded(h("01 00")) == h("01 00"))
        #expect(try withEvent(h("3E 01 11")) { e -> Bool in if case .leMeta(.scanTimeout) = e { return true }; return false })
    }

    @Test func leFeatureNames() {
        let f: LEFeatures = [.leEncryption, .le2MPHY, .leExtendedAdvertising]
        #expect(f.rawValue == 0x1101)
        #expect(f.names == ["LE Encryption", "LE 2M PHY", "LE Extended Advertising"])
        #expect(LEFeatures.name(ofBit: 16) == "Minimum Number of Used Channels procedure")
        #expect(LEFeatures(rawValue: 1 << 63).names == ["bit 63"])
    }
}

/// `HCIEvent.advertisingReport(parsing:)`, the replay's shortcut past the event enums,
/// against parsing the whole event: the same report for an LE Advertising Report, the
/// same error for a broken one, nil for every other event.
@Suite struct AdvertisingReportShortcutTests {
    /// One ADV_NONCONN_IND report from 00:C0:00:00:00:01 (random) with Flags, RSSI -60.
    static let report: [UInt8] = [0x3E, 0x0F, 0x02, 0x01, 0x03, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC0,
                                  0x03, 0x02, 0x01, 0x06, 0xC4]

    func bothWays(_ bytes: [UInt8]) -> (whole: Result<LEAdvertisingReportEvent?, WireError>,
                                        shortcut: Result<LEAdvertisingReportEvent?, WireError>) {
        bytes.withUnsafeBytes { b in
            let whole = Result<LEAdvertisingReportEvent?, WireError> { () throws(WireError) in
                if case .leMeta(.advertisingReport(let e)) = try HCIEvent(parsing: b) { return e }
                return nil
            }
            let shortcut = Result<LEAdvertisingReportEvent?, WireError> { () throws(WireError) in
                try HCIEvent.advertisingReport(parsing: b)
            }
            return (whole, shortcut)
        }
    }

    @Test func sameReportsSameErrorsNilForOtherEvents() throws {
        var cases: [[UInt8]] = [Self.report]
        var longer = Self.report
        longer[1] += 1
        cases.append(longer + [0x00])  // a byte after the report: refused by both
        var short = Self.report
        short[1] -= 1
        cases.append(short)  // the length says one byte fewer than there are
        cases.append(Array(Self.report.dropLast()))  // cut off
        var tooMany = Self.report
        tooMany[3] = 26  // Num_Reports above 25
        cases.append(tooMany)
        cases += [[0x3E, 0x01, 0x02], [0x3E], [], [0x3E, 0x0F], [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00],
                  [0x3E, 0x02, 0x0D, 0x00], [0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0x18, 0x00, 0x00, 0x00, 0x48, 0x00],
                  [0x05, 0x04, 0x00, 0x40, 0x00, 0x13]]
        var reports = 0, errors = 0, others = 0
        for bytes in cases {
            let (whole, shortcut) = bothWays(bytes)
            switch (whole, shortcut) {
            case (.success(let a?), .success(let b?)):
                #expect(a.numReports == b.numReports && a.reportsOffset == b.reportsOffset
                        && Array(a.reportBytes) == Array(b.reportBytes), "\(bytes)")
                reports += 1
            case (.failure(let a), .failure(let b)):
                #expect(a == b, "\(bytes)")
                errors += 1
            case (.success(nil), .success(nil)):
                others += 1
            case (.failure, .success(nil)):
                // Another event, broken: the shortcut leaves it to the whole parse.
                #expect(!(bytes.count >= 3 && bytes[0] == 0x3E && bytes[2] == 0x02), "\(bytes)")
                others += 1
            default:
                Issue.record("\(bytes): \(whole) vs \(shortcut)")
            }
        }
        #expect(reports == 1 && errors == 5 && others == 7, "\(reports) \(errors) \(others)")
        // The report itself, as the spec lays it out.
        let (_, shortcut) = bothWays(Self.report)
        var it = try #require(try shortcut.get()).reports
        let r = try #require(try it.next())
        #expect(r.address == LEAddress(BluetoothAddress(0xC0, 0, 0, 0, 0, 1), type: .random))
        #expect(Array(r.data) == [0x02, 0x01, 0x06] && r.rssiIfAvailable == -60)
    }
}
