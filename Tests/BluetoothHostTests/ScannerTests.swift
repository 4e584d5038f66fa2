import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

@Suite struct ScannerTests {
    typealias LR = LEAdvertisingReportEvent.Owned.Report
    typealias ER = LEExtendedAdvertisingReportEvent.Owned.Report

    func feed(_ s: inout Scanner, _ bytes: [UInt8], now: UInt64 = 0) -> [ScanEvent] {
        withEvent(bytes) { event in
            guard case .leMeta(let m) = event else { preconditionFailure("not an LE meta event") }
            return s.handle(m, now: now)
        }
    }

    @Test("GAP/DISC/GENP/BV-01-C (part): One advertising report event with two reports") func legacyEventWithTwoReports() {
        var s = Scanner(configuration: .init(scanResponseWait: .zero), extended: false)
        let events = feed(&s, legacyReportEvent([
            LR(eventType: .advInd, address: addr(1), data: ad(name: "Alpha", services16: [0x180D]), rssi: -40),
            LR(eventType: .advNonconnInd, address: addr(2, .random), data: ad(name: "Beta"), rssi: -70),
        ]))
        #expect(events.count == 2)
        guard case .discovered(let a) = events[0], case .discovered(let b) = events[1] else {
            Issue.record("expected two discoveries"); return
        }
        #expect(a.name == "Alpha")
        #expect(a.serviceUUIDs == [BluetoothUUID(0x180D)])
        #expect(a.rssi == -40)
        #expect(a.eventType.connectable && a.eventType.scannable && a.eventType.legacy && !a.eventType.extendedReport)
        #expect(a.flags == ADFlags(rawValue: 0x06))
        #expect(b.address == addr(2, .random))
        #expect(b.eventType.pduName == "ADV_NONCONN_IND")
        #expect(s.statistics.legacyReports == 2)
    }

    @Test func extendedFragmentsAreReassembled() {
        var s = Scanner(configuration: .init(active: false), extended: true)
        let full = ad(name: String(repeating: "N", count: 200), manufacturer: (0x004C, Array(repeating: 7, count: 200)))
        #expect(full.count > 229 * 1)
        let parts = [Array(full[0..<200]), Array(full[200..<400]), Array(full[400...])]
        let more = LEExtendedAdvertisingEventType(connectable: true, dataStatus: .incompleteMoreData)
        let done = LEExtendedAdvertisingEventType(connectable: true, dataStatus: .complete)
        #expect(feed(&s, extendedReportEvent([ER(eventType: more, address: addr(3), advertisingSID: 1, rssi: -50, data: parts[0])])).isEmpty)
        #expect(feed(&s, extendedReportEvent([ER(eventType: more, address: addr(3), advertisingSID: 1, rssi: -50, data: parts[1])])).isEmpty)
        let events = feed(&s, extendedReportEvent([ER(eventType: done, address: addr(3), primaryPHY: .leCoded, secondaryPHY: .le2M,
                                                      advertisingSID: 1, txPower: 4, rssi: -51, data: parts[2])]))
        guard case .discovered(let d) = events.first else { Issue.record("expected a discovery"); return }
        #expect(d.advertisingData == full)
        #expect(d.name?.count == 200)
        #expect(d.manufacturerData?.companyID == 0x004C)
        #expect(d.manufacturerData?.data.count == 200)
        #expect(d.txPower == 4)
        #expect(d.eventType.sid == 1)
        #expect(d.eventType.primaryPHY == .leCoded)
        #expect(d.eventType.secondaryPHY == .le2M)
        #expect(!d.eventType.legacy)
    }

    @Test func truncatedFragmentIsDroppedAndCounted() {
        var s = Scanner(configuration: .init(), extended: true)
        let more = LEExtendedAdvertisingEventType(dataStatus: .incompleteMoreData)
        let truncated = LEExtendedAdvertisingEventType(dataStatus: .incompleteTruncated)
        _ = feed(&s, extendedReportEvent([ER(eventType: more, address: addr(4), advertisingSID: 2, rssi: -50, data: ad(name: "part"))]))
        #expect(feed(&s, extendedReportEvent([ER(eventType: truncated, address: addr(4), advertisingSID: 2, rssi: -50, data: [1, 2])])).isEmpty)
        #expect(s.statistics.droppedTruncated == 1)
        #expect(s.deviceCount == 0)
        // A later complete advertisement is not glued to the dropped fragments.
        let ok = feed(&s, extendedReportEvent([ER(eventType: LEExtendedAdvertisingEventType(), address: addr(4), advertisingSID: 2,
                                                  rssi: -50, data: ad(name: "whole"))]))
        #expect(ok.first?.device.name == "whole")
    }

    @Test func oversizedReassemblyIsDropped() {
        var s = Scanner(configuration: .init(), extended: true)
        let more = LEExtendedAdvertisingEventType(dataStatus: .incompleteMoreData)
        for _ in 0..<8 {
            _ = feed(&s, extendedReportEvent([ER(eventType: more, address: addr(5), advertisingSID: 0, rssi: -50,
                                                 data: [UInt8](repeating: 0, count: 229))]))
        }
        #expect(s.statistics.droppedOverflow == 1)  // 8 × 229 = 1832 > 1650
    }

    @Test("GAP/BROB/OBSV/BV-02-C (part): Active scanning: the scan response merged, kept apart") func scanResponseIsMergedAndKeptSeparately() {
        var s = Scanner(configuration: .init(), extended: false)
        let adv = ad(services16: [0x180F])
        let rsp = ad(name: "Gamma", flags: nil)
        // Held until the scan response is in, then reported once with both.
        #expect(feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(6), data: adv, rssi: -60)])).isEmpty)
        let second = feed(&s, legacyReportEvent([LR(eventType: .scanRsp, address: addr(6), data: rsp, rssi: -61)]))
        guard second.count == 1, case .discovered(let d) = second[0] else { Issue.record("expected one discovery"); return }
        #expect(d.advertisingData == adv)
        #expect(d.scanResponseData == rsp)
        #expect(d.name == "Gamma")
        #expect(d.serviceUUIDs == [BluetoothUUID(0x180F)])
        #expect(d.eventType.pduName == "ADV_IND")  // the scan response does not change the PDU kind
        #expect(d.reportCount == 2)
        // Same thing again: nothing new.
        #expect(feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(6), data: adv, rssi: -60),
                                            LR(eventType: .scanRsp, address: addr(6), data: rsp, rssi: -61)])).isEmpty)
    }

    @Test func extendedScanResponseMerged() {
        var s = Scanner(configuration: .init(), extended: true)
        let advType = LEExtendedAdvertisingEventType(connectable: true, scannable: true, legacy: true)
        let rspType = LEExtendedAdvertisingEventType(connectable: true, scannable: true, scanResponse: true, legacy: true)
        _ = feed(&s, extendedReportEvent([ER(eventType: advType, address: addr(7), rssi: -30, data: ad(services16: [0x1812])),
                                          ER(eventType: rspType, address: addr(7), rssi: -30, data: ad(name: "Kbd", flags: nil))]))
        #expect(s.deviceCount == 1)
        #expect(s.statistics.extendedReports == 2)
    }

    @Test func duplicatesFilteredRSSIAloneIsSilent() {
        var s = Scanner(configuration: .init(scanResponseWait: .zero), extended: false)
        let r = { (rssi: Int8, name: String) in legacyReportEvent([LR(eventType: .advInd, address: addr(8), data: ad(name: name), rssi: rssi)]) }
        #expect(feed(&s, r(-40, "A")).count == 1)
        #expect(feed(&s, r(-45, "A")).isEmpty)
        #expect(feed(&s, r(-45, "A")).isEmpty)
        let changed = feed(&s, r(-46, "B"))
        guard case .updated(let d) = changed.first else { Issue.record("expected update"); return }
        #expect(d.rssi == -46)
        #expect(d.reportCount == 4)
    }

    @Test func reportDuplicatesReportsEverything() {
        var s = Scanner(configuration: .init(reportDuplicates: true), extended: false)
        let r = legacyReportEvent([LR(eventType: .advInd, address: addr(8), data: ad(name: "A"), rssi: -40)])
        #expect(feed(&s, r).count == 1)
        #expect(feed(&s, r).count == 1)
        #expect(feed(&s, r).first.map { if case .updated = $0 { true } else { false } } == true)
    }

    @Test func devicesAgeOut() {
        var s = Scanner(configuration: .init(deviceTimeout: .seconds(10), scanResponseWait: .zero), extended: false)
        let r = legacyReportEvent([LR(eventType: .advInd, address: addr(9), data: ad(name: "A"), rssi: -40)])
        #expect(feed(&s, r, now: 0).count == 1)
        #expect(s.nextDeadline == 10 * second)
        #expect(feed(&s, r, now: 5 * second).isEmpty)
        #expect(s.timerFired(now: 10 * second).isEmpty)  // last heard at 5 s: still known
        #expect(s.deviceCount == 1)
        #expect(s.nextDeadline == 15 * second)
        #expect(s.timerFired(now: 15 * second).isEmpty)
        #expect(s.deviceCount == 0)
        #expect(s.statistics.expired == 1)
        #expect(s.nextDeadline == nil)
        guard case .discovered = feed(&s, r, now: 16 * second).first else { Issue.record("expected rediscovery"); return }
    }

    @Test func tableCapEvictsLeastRecentlySeen() {
        var s = Scanner(configuration: .init(maximumDevices: 3, scanResponseWait: .zero), extended: false)
        for i: UInt8 in 1...3 {
            _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(i), data: ad(name: "D\(i)"), rssi: -40)]), now: UInt64(i))
        }
        // Device 1 heard again: device 2 is now the least recently seen.
        _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(1), data: ad(name: "D1"), rssi: -40)]), now: 10)
        _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(4), data: ad(name: "D4"), rssi: -40)]), now: 11)
        #expect(s.deviceCount == 3)
        #expect(s.statistics.evicted == 1)
        // Device 2 comes back as new, device 1 is still known.
        #expect(feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(1), data: ad(name: "D1"), rssi: -40)]), now: 12).isEmpty)
        guard case .discovered = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(2), data: ad(name: "D2"), rssi: -40)]), now: 13).first
        else { Issue.record("expected device 2 to be new"); return }
    }

    /// A capture whose clock steps back: a device last heard "later" than now is not aged
    /// out (the difference would wrap), neither by the sweep nor when heard again.
    @Test func aClockSteppingBackAgesNothingOut() {
        let second: UInt64 = 1_000_000_000
        var s = Scanner(configuration: .init(deviceTimeout: .seconds(10), scanResponseWait: .zero), extended: false)
        func hear(_ i: UInt8, at now: UInt64) -> [ScanEvent] {
            feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(i), data: ad(name: "D\(i)"), rssi: -40)]), now: now)
        }
        #expect(hear(1, at: 100 * second).count == 1)
        #expect(hear(2, at: 50 * second).count == 1)  // the clock stepped back 50 s
        #expect(s.timerFired(now: 55 * second).isEmpty)
        #expect(s.statistics.expired == 0 && s.deviceCount == 2)
        #expect(hear(1, at: 56 * second).isEmpty, "device 1 is still known")
        #expect(s.statistics.expired == 0)
        // Time moves on past both: both age out.
        #expect(s.timerFired(now: 200 * second).isEmpty)
        #expect(s.statistics.expired == 2 && s.deviceCount == 0)
    }

    /// Devices heard at the same instant (one capture time stamp, a multi-report event):
    /// the one heard first of them goes, one device for one new device.
    @Test func evictionOfTiesTakesOneInTheOrderHeard() {
        var s = Scanner(configuration: .init(maximumDevices: 80, scanResponseWait: .zero), extended: false)
        func hear(_ i: Int, at now: UInt64) -> [ScanEvent] {
            let a = LEAddress(BluetoothAddress(0xC0, 0x11, 0x22, 0x33, 0x44, UInt8(i)), type: .public)
            return feed(&s, legacyReportEvent([LR(eventType: .advInd, address: a, data: ad(name: "D\(i)"), rssi: -40)]), now: now)
        }
        for i in 1 ... 80 { _ = hear(i, at: i <= 40 ? 1000 : 2000) }
        _ = hear(255, at: 3000)
        #expect(s.statistics.evicted == 1)
        #expect(s.deviceCount == 80)
        #expect(hear(1, at: 3001).count == 1, "device 1, heard first, was forgotten")
        #expect(s.statistics.evicted == 2)  // and device 2 made room for it
        for i in 3 ... 80 { #expect(hear(i, at: 3002).isEmpty, "device \(i) should have been remembered") }
    }

    /// A full table forgets the least recently heard device for each new one: exactly those,
    /// whatever order the devices were heard in, over many rounds (no pass over the table).
    @Test func tableCapEvictsTheLeastRecentlyHeard() {
        var s = Scanner(configuration: .init(maximumDevices: 80, scanResponseWait: .zero), extended: false)
        func hear(_ i: Int, at now: UInt64) -> [ScanEvent] {
            let a = LEAddress(BluetoothAddress(0xC0, 0x11, 0x22, 0x33, UInt8(i >> 8), UInt8(i & 0xFF)), type: .public)
            return feed(&s, legacyReportEvent([LR(eventType: .advInd, address: a, data: ad(name: "D\(i)"), rssi: -40)]), now: now)
        }
        // The model: devices from least to most recently heard.
        var recent: [Int] = []
        var rng = AddressTableTests.Rng(state: 7)
        var now: UInt64 = 1000
        for _ in 0 ..< 2000 {
            // Mostly the known devices again, sometimes a new one (from a pool of 300).
            let i = Int.random(in: 1 ... 300, using: &rng)
            now += 1
            let known = recent.contains(i)
            let out = hear(i, at: now)
            #expect(out.isEmpty == known, "device \(i): new \(!known), events \(out.count)")
            if !known && recent.count == 80 { recent.removeFirst() }
            recent.removeAll { $0 == i }
            recent.append(i)
            #expect(s.deviceCount == recent.count)
        }
        #expect(s.statistics.evicted > 0)
    }

    /// Silent devices are forgotten from the front of the recency order: exactly those not
    /// heard for the timeout, in one timer, and the next timer when the next one ages out.
    @Test func sweepForgetsExactlyTheSilentOnes() {
        let second: UInt64 = 1_000_000_000
        var s = Scanner(configuration: .init(deviceTimeout: .seconds(10), scanResponseWait: .zero), extended: false)
        func hear(_ i: UInt8, at now: UInt64) -> [ScanEvent] {
            feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(i), data: ad(name: "D\(i)"), rssi: -40)]), now: now)
        }
        for i: UInt8 in 1 ... 10 { _ = hear(i, at: UInt64(i) * second) }
        // The even ones heard again at 10.5 s: at 20 s the odd ones (last heard 1 to 9 s)
        // and nothing else go.
        for i: UInt8 in stride(from: 2, through: 10, by: 2) { #expect(hear(i, at: 10 * second + second / 2).isEmpty) }
        #expect(s.nextDeadline == 11 * second)
        #expect(s.timerFired(now: 20 * second).isEmpty)
        #expect(s.statistics.expired == 5)
        #expect(s.deviceCount == 5)
        // The evens age out at 20.5 s: the next timer not before an eighth of the timeout.
        #expect(s.nextDeadline == 20 * second + 10 * second / 8)
        for i: UInt8 in stride(from: 1, through: 9, by: 2) { #expect(hear(i, at: 20 * second).count == 1) }
        #expect(s.timerFired(now: 20 * second + 10 * second / 8).isEmpty)
        #expect(s.deviceCount == 5)  // the evens went; the odds, heard at 20 s, stay
        #expect(s.statistics.expired == 10)
        #expect(s.nextDeadline == 30 * second)
    }

    @Test func filters() {
        let reports = legacyReportEvent([
            LR(eventType: .advInd, address: addr(1), data: ad(name: "Heart Monitor", services16: [0x180D]), rssi: -40),
            LR(eventType: .advInd, address: addr(2), data: ad(name: "Thermometer", services16: [0x1809]), rssi: -80),
            LR(eventType: .advInd, address: addr(3), data: ad(services16: [0x180F]), rssi: -50),
        ])
        func names(_ c: ScanConfiguration) -> [UInt8] {
            var c = c
            c.scanResponseWait = .zero
            var s = Scanner(configuration: c, extended: false)
            return feed(&s, reports).map { UInt8(truncatingIfNeeded: $0.device.address.address.rawValue) }
        }
        #expect(names(.init()) == [1, 2, 3])
        #expect(names(.init(services: [BluetoothUUID(0x1809), BluetoothUUID(0x180F)])) == [2, 3])
        #expect(names(.init(nameSubstring: "MONITOR")) == [1])
        #expect(names(.init(address: addr(3).address)) == [3])
        #expect(names(.init(minimumRSSI: -60)) == [1, 3])
    }

    @Test func nameInScanResponseMatchesLater() {
        var s = Scanner(configuration: .init(nameSubstring: "gam"), extended: false)
        #expect(feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(6), data: ad(), rssi: -60)])).isEmpty)
        let e = feed(&s, legacyReportEvent([LR(eventType: .scanRsp, address: addr(6), data: ad(name: "Gamma", flags: nil), rssi: -60)]))
        guard case .discovered(let d) = e.first else { Issue.record("expected discovery on scan response"); return }
        #expect(d.name == "Gamma")
    }

    @Test func legacyAndExtendedCommandSequences() {
        let legacy = Scanner(configuration: .init(active: false, interval: 0x20, window: 0x10), extended: false)
        let l = legacy.enableCommands().map { try! $0.encodedH4() }
        #expect(l.map { opcodeOf($0) } == [.leSetScanParameters, .leSetScanEnable])
        #expect(l[0] == h4(LESetScanParametersCommand(scanType: .passive, scanInterval: 0x20, scanWindow: 0x10)))
        #expect(l[1] == h4(LESetScanEnableCommand(enable: true, filterDuplicates: true)))
        #expect(legacy.disableCommands().map { try! $0.encodedH4() } == [h4(LESetScanEnableCommand(enable: false))])

        let ext = Scanner(configuration: .init(phys: [.le1M, .leCoded], reportDuplicates: true), extended: true)
        let e = ext.enableCommands().map { try! $0.encodedH4() }
        let block = LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x60, scanWindow: 0x30)
        #expect(e == [h4(LESetExtendedScanParametersCommand(le1M: block, leCoded: block)),
                      h4(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .disabled))])
        #expect(ext.disableCommands().map { try! $0.encodedH4() } == [h4(LESetExtendedScanEnableCommand(enable: false))])
    }

    @Test func bothReportKindsAcceptedInEitherMode() {
        var s = Scanner(configuration: .init(), extended: false)
        _ = feed(&s, extendedReportEvent([ER(eventType: LEExtendedAdvertisingEventType(legacy: true), address: addr(1), rssi: -1, data: ad(name: "x"))]))
        var t = Scanner(configuration: .init(), extended: true)
        _ = feed(&t, legacyReportEvent([LR(eventType: .advInd, address: addr(1), data: ad(name: "x"), rssi: -1)]))
        #expect(s.deviceCount == 1 && t.deviceCount == 1)
    }

    // MARK: Scan response merge (active scanning)

    @Test func newScannableDeviceIsReportedOnceWithItsScanResponse() {
        var s = Scanner(configuration: .init(), extended: false)
        let adv = legacyReportEvent([LR(eventType: .advInd, address: addr(5), data: ad(services16: [0x1809]), rssi: -40)])
        let rsp = legacyReportEvent([LR(eventType: .scanRsp, address: addr(5), data: ad(name: "Thermo", flags: nil), rssi: -41)])
        #expect(feed(&s, adv, now: 0).isEmpty)
        #expect(s.nextDeadline == 150_000_000)
        let events = feed(&s, rsp, now: 1_000_000)
        #expect(events.count == 1)
        guard case .discovered(let d) = events.first else { Issue.record("expected one discovery"); return }
        #expect(d.name == "Thermo")
        #expect(d.serviceUUIDs == [BluetoothUUID(0x1809)])
        #expect(!d.scanResponseData.isEmpty)
        #expect(s.nextDeadline == 60 * second)  // only the age-out sweep is left
        // The same pair again is no change.
        #expect(feed(&s, adv, now: 2_000_000).isEmpty)
        #expect(feed(&s, rsp, now: 3_000_000).isEmpty)
    }

    @Test func heldDeviceIsReportedWhenNoScanResponseComes() {
        var s = Scanner(configuration: .init(), extended: false)
        let adv = legacyReportEvent([LR(eventType: .advInd, address: addr(6), data: ad(name: "Quiet"), rssi: -40)])
        #expect(feed(&s, adv, now: 0).isEmpty)
        #expect(s.timerFired(now: 100_000_000).isEmpty)
        let events = s.timerFired(now: 150_000_000)
        guard events.count == 1, case .discovered(let d) = events[0] else { Issue.record("expected the held discovery"); return }
        #expect(d.name == "Quiet" && d.scanResponseData.isEmpty)
        #expect(s.timerFired(now: 200_000_000).isEmpty)
    }

    @Test func heldDevicesAreFlushedAtTheEnd() {
        var s = Scanner(configuration: .init(), extended: false)
        _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: addr(7), data: ad(name: "Late"), rssi: -40)]))
        #expect(s.flush().count == 1)
        #expect(s.flush().isEmpty)
    }

    /// A device number as a random static address (more than 256 devices).
    func device(_ n: Int) -> LEAddress {
        LEAddress(BluetoothAddress(rawValue: 0xC0_0000_0000 | UInt64(n)), type: .random)
    }

    func discovered(_ events: [ScanEvent]) -> [LEAddress] {
        events.compactMap { if case .discovered(let d) = $0 { d.address } else { nil } }
    }

    // Issue 26: the held devices are a queue in deadline order. A model of what must come
    // out (each held device once: with its scan response, or at its deadline), against
    // a random interleaving of advertisements, scan responses and timer calls, with
    // hundreds held at once; nextDeadline must be the earliest live hold every time.
    @Test func heldDevicesFollowTheirDeadlinesInACrowd() {
        var rng = AddressTableTests.Rng(state: 0x26)
        let wait: UInt64 = 150_000_000
        var s = Scanner(configuration: .init(deviceTimeout: .seconds(3600)), extended: false)
        var held: [LEAddress: UInt64] = [:]
        var heldList: [LEAddress] = []  // the same, in an order that does not depend on hashing
        func release(_ a: LEAddress) {
            held[a] = nil
            if let i = heldList.firstIndex(of: a) { heldList.swapAt(i, heldList.count - 1); heldList.removeLast() }
        }
        var reported = Set<LEAddress>()
        var now: UInt64 = 0
        var next = 0
        for _ in 0 ..< 6_000 {
            now += rng.next() % 400_000  // up to 0.4 ms between reports: ~700 held at once
            // The timer, as the driver runs it: when the deadline has come.
            if let d = s.nextDeadline, d <= now {
                let out = discovered(s.timerFired(now: now))
                let due = Set(held.filter { $0.value <= now }.keys)
                #expect(Set(out) == due)
                #expect(out.count == due.count)
                for a in out { release(a); reported.insert(a) }
            }
            let roll = rng.next() % 10
            if roll < 5 || held.isEmpty {
                // A new scannable device.
                let a = device(next)
                next += 1
                #expect(feed(&s, legacyReportEvent([LR(eventType: .advInd, address: a, data: ad(name: "N"), rssi: -50)]), now: now).isEmpty)
                held[a] = now + wait
                heldList.append(a)
            } else if roll < 8 {
                // A scan response for a held device (any of them, not the oldest).
                let a = heldList[Int(rng.next() % UInt64(heldList.count))]
                let out = discovered(feed(&s, legacyReportEvent([LR(eventType: .scanRsp, address: a, data: ad(name: "R", flags: nil), rssi: -50)]), now: now))
                #expect(out == [a])
                release(a)
                reported.insert(a)
            } else {
                // A held device advertising again before its deadline: still held.
                let a = heldList[Int(rng.next() % UInt64(heldList.count))]
                let out = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: a, data: ad(name: "N"), rssi: -50)]), now: now)
                if let until = held[a], until <= now {
                    #expect(discovered(out) == [a])
                    release(a)
                    reported.insert(a)
                } else {
                    #expect(out.isEmpty)
                }
            }
            if let earliest = held.values.min() {
                #expect(s.nextDeadline == earliest)
            } else {
                #expect(s.nextDeadline.map { $0 > now + wait } ?? true)  // only the far age-out sweep
            }
        }
        let rest = discovered(s.flush())
        #expect(Set(rest) == Set(held.keys) && rest.count == held.count)
        #expect(reported.isDisjoint(with: rest))
        #expect(reported.count + rest.count == next)
    }

    @Test func evictedHeldDevicesAreShownAsTheyGoAndAgedOutOnesNotLater() {
        let wait: UInt64 = 150_000_000
        var s = Scanner(configuration: .init(deviceTimeout: .seconds(1), maximumDevices: 8), extended: false)
        for n in 0 ..< 8 {
            _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: device(n), data: ad(name: "H"), rssi: -50)]), now: UInt64(n))
        }
        #expect(s.nextDeadline == wait)
        // Device 8 makes room: the least recently seen (device 0, at the front) goes, shown
        // as it goes (its wait not over), and not again.
        let evicted = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: device(8), data: ad(name: "H"), rssi: -50)]), now: 8)
        #expect(discovered(evicted) == [device(0)])
        #expect(s.deviceCount == 8)
        #expect(s.nextDeadline == wait + 1)  // the front is device 1 now
        let out = discovered(s.timerFired(now: wait + 8))
        #expect(out == (1 ... 8).map(device))
        // Held again after aging out: only the new hold counts.
        var t = Scanner(configuration: .init(deviceTimeout: .milliseconds(100)), extended: false)
        let a = device(1)
        _ = feed(&t, legacyReportEvent([LR(eventType: .advInd, address: a, data: ad(name: "H"), rssi: -50)]), now: 0)
        _ = feed(&t, legacyReportEvent([LR(eventType: .advInd, address: a, data: ad(name: "H"), rssi: -50)]), now: 120_000_000)
        #expect(t.nextDeadline == 100_000_000)  // the age-out sweep comes first
        #expect(t.timerFired(now: wait).isEmpty)  // the first hold was dropped with the device
        #expect(t.nextDeadline == 220_000_000)  // the next sweep: last heard at 120 ms
        #expect(discovered(t.timerFired(now: 120_000_000 + wait)) == [a])
        #expect(t.flush().isEmpty)
    }

    @Test func aClockThatStepsBackDelaysButLosesNoHeldDevice() {
        // A capture's timestamps can go back (a merged or edited file).
        var s = Scanner(configuration: .init(), extended: false)
        _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: device(1), data: ad(name: "A"), rssi: -50)]), now: 1_000_000_000)
        _ = feed(&s, legacyReportEvent([LR(eventType: .advInd, address: device(2), data: ad(name: "B"), rssi: -50)]), now: 0)
        #expect(s.nextDeadline == 1_150_000_000)
        #expect(s.timerFired(now: 200_000_000).isEmpty)  // device 2 waits behind device 1
        #expect(discovered(s.timerFired(now: 1_150_000_000)) == [device(1), device(2)])
    }

    @Test("GAP/BROB/OBSV/BV-01-C (part): Passive scanning or non-scannable: reported at once") func passiveOrNonScannableIsReportedAtOnce() {
        var passive = Scanner(configuration: .init(active: false), extended: false)
        #expect(feed(&passive, legacyReportEvent([LR(eventType: .advInd, address: addr(1), data: ad(name: "P"), rssi: -40)])).count == 1)
        var active = Scanner(configuration: .init(), extended: false)
        #expect(feed(&active, legacyReportEvent([LR(eventType: .advNonconnInd, address: addr(2), data: ad(name: "N"), rssi: -40)])).count == 1)
    }

    @Test func advertisedTXPowerLevelWinsOverTheReportField() {
        var s = Scanner(configuration: .init(active: false), extended: true)
        var data = ad(name: "T")
        data += [2, 0x0A, 4]  // TX Power Level 4 dBm
        let e = feed(&s, extendedReportEvent([ER(eventType: LEExtendedAdvertisingEventType(connectable: true, dataStatus: .complete),
                                                 address: addr(9), txPower: 0, rssi: -50, data: data)]))
        #expect(e.first?.device.txPower == 4)
    }

    @Test func connectableExtendedPDUWaitsForAScanResponseToo() {
        var s = Scanner(configuration: .init(), extended: true)
        let adv = LEExtendedAdvertisingEventType(connectable: true, dataStatus: .complete)
        let rsp = LEExtendedAdvertisingEventType(scanResponse: true, dataStatus: .complete)
        #expect(feed(&s, extendedReportEvent([ER(eventType: adv, address: addr(4), rssi: -50, data: ad(name: "X"))])).isEmpty)
        let e = feed(&s, extendedReportEvent([ER(eventType: rsp, address: addr(4), rssi: -50, data: ad(name: "X"))]))
        #expect(e.count == 1)
    }

    @Test("GAP/BROB/OBSV/BV-01-C (part): A passive scan ignores scan responses") func passiveScanIgnoresScanResponses() {
        var s = Scanner(configuration: .init(active: false), extended: false)
        #expect(feed(&s, legacyReportEvent([LR(eventType: .advNonconnInd, address: addr(3), data: ad(name: "A"), rssi: -40)])).count == 1)
        #expect(feed(&s, legacyReportEvent([LR(eventType: .scanRsp, address: addr(3), data: ad(name: "B", flags: nil), rssi: -40)])).isEmpty)
        #expect(s.statistics.ignoredScanResponses == 1)
    }
}
