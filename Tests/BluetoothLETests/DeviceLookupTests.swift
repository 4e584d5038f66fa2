import BluetoothHost
import BluetoothLE
import BluetoothWire
import FakeController
import Synchronization
import Testing

private func device(_ last: UInt8, name: String? = nil, type: LEAddressType = .public, identity: LEAddress? = nil,
                    services: [UInt16] = []) -> DiscoveredDevice {
    var ad: [UInt8] = [2, 0x01, 0x06]
    if !services.isEmpty {
        ad += [UInt8(1 + 2 * services.count), 0x03]
        for s in services { ad += [UInt8(s & 0xFF), UInt8(s >> 8)] }
    }
    if let name { let u = Array(name.utf8); ad += [UInt8(1 + u.count), 0x09] + u }
    var d = DiscoveredDevice(address: LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, last), type: type), rssi: -50,
                             txPower: nil, advertisingData: ad, scanResponseData: [],
                             eventType: AdvertisingEventInfo(connectable: true, scannable: true), firstSeen: 0, lastSeen: 0,
                             reportCount: 1)
    d.identity = identity
    return d
}

private let second: UInt64 = 1_000_000_000

@Suite struct DeviceTargetTests {
    @Test func parsesAddressesWithAndWithoutTheirTypeAndNames() throws {
        let a = BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x01)
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4:01") == .untypedAddress(a))
        #expect(try DeviceTarget(parsing: "f0:f1:f2:f3:f4:01/public") == .address(LEAddress(a, type: .public)))
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4:01/Random") == .address(LEAddress(a, type: .random)))
        #expect(try DeviceTarget(parsing: "Thermo-1") == .name("Thermo-1"))
        // As this package prints addresses (hcigatt bonds, scan): the kind names the type.
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4:01 (random-static)") == .address(LEAddress(a, type: .random)))
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4:01 (public)") == .address(LEAddress(a, type: .public)))
        #expect(try DeviceTarget(parsing: "Kitchen (left)") == .name("Kitchen (left)"), "a name with brackets stays a name")
        // Not an address: a name (a name may look like anything).
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4") == .name("F0:F1:F2:F3:F4"))
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4:01").query == .address(a))
        #expect(try DeviceTarget(parsing: "F0:F1:F2:F3:F4:01/public").query == nil)
    }

    @Test(arguments: ["", "F0:F1:F2:F3:F4:01/static", "F0:F1:F2:F3:F4:01/"])
    func refusesWhatIsNeitherWithAReason(text: String) {
        #expect(throws: BluetoothError.self) { try DeviceTarget(parsing: text) }
    }

    @Test func oneMatchingRuleForEveryLookup() {
        let thermo = device(1, name: "Thermo-1", services: [0x1809])
        #expect(DeviceQuery.name("thermo-1").match(thermo) == .exact)
        #expect(DeviceQuery.name("THERMO").match(thermo) == .partial)
        #expect(DeviceQuery.name("Pulse").match(thermo) == .none)
        #expect(DeviceQuery.service(BluetoothUUID(0x1809)).match(thermo) == .exact)
        #expect(DeviceQuery.service(BluetoothUUID(0x180D)).match(thermo) == .none)
        #expect(DeviceQuery.address(thermo.address.address).match(thermo) == .exact)
        // A bonded identity behind a private address.
        let identity = LEAddress(BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x01), type: .public)
        let rpa = device(9, type: .random, identity: identity)
        #expect(DeviceQuery.address(identity.address).match(rpa) == .exact)
        #expect(DeviceQuery.name("x").match(device(2)) == .none, "no name heard")
    }
}

@Suite struct DeviceDirectoryTests {
    @Test func exactMatchesAtOnceTypedAddressesWithoutAScan() async throws {
        let typed = LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 7), type: .random)
        let dir = DeviceDirectory([.name("Thermo-1"), .address(typed), .untypedAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 2))])
        #expect(!dir.allFound)
        #expect(dir.missing.count == 2)
        #expect(try await dir.address(of: 1) == typed)
        let waiting = Task { try await dir.address(of: 0) }
        var r = dir.note(device(1, name: "thermo-1"), now: 0)
        #expect(r.found.map(\.index) == [0])
        #expect(try await waiting.value == device(1).address)
        r = dir.note(device(2, type: .random), now: 0)
        #expect(r.found.map(\.address) == [device(2, type: .random).address], "the type learned from the scan")
        #expect(dir.allFound)
    }

    @Test func aContainedNameWaitsForAnExactOne() {
        let dir = DeviceDirectory([.name("Thermo"), .name("Cuff")])
        let r = dir.note(device(1, name: "Thermo-1"), now: 10 * second)
        #expect(r.found.isEmpty)
        #expect(r.promoteAt == 10 * second + DeviceDirectory.partialMatchWait)
        // The exact one comes within the wait: it wins.
        #expect(dir.note(device(3, name: "thermo"), now: 11 * second).found.map(\.address) == [device(3).address])
        #expect(dir.promote(now: 20 * second).isEmpty)
        // No exact one: the contained name is taken once the wait is over, not before.
        #expect(dir.note(device(4, name: "Cuff-4"), now: 30 * second).promoteAt != nil)
        #expect(dir.note(device(5, name: "BigCuff"), now: 31 * second).promoteAt == nil, "the first heard stays the candidate")
        #expect(dir.promote(now: 31 * second).isEmpty)
        #expect(dir.promote(now: 32 * second).map(\.address) == [device(4).address])
        #expect(dir.allFound)
    }

    @Test func aCancelledWaiterLeavesAndOnlyIt() async throws {
        let dir = DeviceDirectory([.name("Nobody")])
        let early = Task { try await dir.address(of: 0) }
        early.cancel()
        await #expect(throws: CancellationError.self) { try await early.value }
        let leaving = Task { try await dir.address(of: 0) }
        let staying = Task { try await dir.address(of: 0) }
        // Both suspended (stored as waiters) before one is cancelled.
        try await Task.sleep(for: .milliseconds(50))
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        _ = dir.note(device(1, name: "Nobody"), now: 0)
        #expect(try await staying.value == device(1).address)
        // Another task may still ask later.
        #expect(try await dir.address(of: 0) == device(1).address)
    }

    @Test func oneDeviceIsNotTakenForTwoTargets() {
        // --device Thermo --device Thermo-1, the real "Thermo" off: Thermo-1 is target 1's.
        let dir = DeviceDirectory([.name("Thermo"), .name("Thermo-1")])
        let r = dir.note(device(1, name: "Thermo-1"), now: 0)
        #expect(r.found.map(\.index) == [1])
        #expect(r.promoteAt == nil)
        #expect(dir.promote(now: 10 * second).isEmpty)
        // A candidate claimed by an exact match while it waited is dropped, not shared.
        let other = DeviceDirectory([.name("Cuff"), .name("cuff-2")])
        _ = other.note(device(2, name: "Cuff-2", services: []), now: 0)
        #expect(other.missing == [.name("Cuff")])
        let late = DeviceDirectory([.name("Cuff"), .untypedAddress(device(2).address.address)])
        #expect(late.note(device(2, name: "Cuff-2"), now: 0).found.map(\.index) == [1])
        #expect(late.promote(now: 10 * second).isEmpty)
        #expect(late.note(device(3, name: "Cuff"), now: 11 * second).found.map(\.index) == [0])
    }
}

@Suite struct ConnectionParameterWishTests {
    @Test func unsetValuesKeepTheLinksAndAnInvalidTimeoutIsRaised() {
        let now = LELinkState(handle: 0x40, role: .central, peer: device(1).address, interval: 24, latency: 0, supervisionTimeout: 72)
        let same = ConnectionParameterWish().request(from: now)
        #expect((same.intervalMin, same.intervalMax, same.peripheralLatency, same.timeoutMultiplier) == (24, 24, 0, 72))
        // 4 s interval with latency 4: 72 × 10 ms is far too short (Core Vol 6 Part B §4.5.2).
        let slow = ConnectionParameterWish(interval: 3200 ... 3200, latency: 4).request(from: now)
        #expect(slow.timeoutMultiplier == 3200)
        #expect(LEConnectionManager.isAcceptable(ConnectionParameterWish(interval: 80 ... 100, latency: 4).request(from: now)))
        let given = ConnectionParameterWish(supervisionTimeout: 500).request(from: now)
        #expect(given.timeoutMultiplier == 500)
    }
}

@Suite struct ReconnectBackoffTests {
    @Test func doublesUpToTheMaximumAndStartsOverAfterADelivery() {
        var b = ReconnectBackoff()
        #expect((0 ..< 9).map { _ in b.next(delivered: false) }
                == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
        #expect(b.next(delivered: true) == .seconds(1))
        #expect(b.next(delivered: false) == .seconds(2))
        var small = ReconnectBackoff(initial: .milliseconds(250), maximum: .milliseconds(100))
        #expect(small.next(delivered: false) == .milliseconds(250), "a maximum below the start is the start")
        #expect(small.next(delivered: false) == .milliseconds(250))
    }
}

@Suite struct ReconnectionTests {
    struct Refused: Error {}

    @Test func eachModeRetriesWhatItSays() {
        var never = Reconnection(.never)
        #expect(never.next(failure: nil, linkLoss: false, delivered: true) == nil)
        var onLoss = Reconnection(.afterLinkLoss)
        #expect(onLoss.next(failure: Refused(), linkLoss: true, delivered: false) == Reconnection.linkLossPause)
        #expect(onLoss.next(failure: nil, linkLoss: false, delivered: true) == Reconnection.linkLossPause, "closed without an error")
        #expect(onLoss.next(failure: Refused(), linkLoss: false, delivered: false) == nil, "a refusal is the end")
        var always = Reconnection(.always)
        #expect(always.next(failure: Refused(), linkLoss: false, delivered: false) == .seconds(1))
        #expect(always.next(failure: Refused(), linkLoss: false, delivered: false) == .seconds(2))
        #expect(always.next(failure: nil, linkLoss: true, delivered: true) == .seconds(1))
    }
}

/// Several targets found on one scan of a fake controller (the monitor's lookup).
@Suite struct DeviceDirectoryScanTests {
    typealias LR = LEAdvertisingReportEvent.Owned.Report

    /// A legacy-scanning controller that reports `reports` once, when the scan is enabled.
    func controller(_ reports: [LR]) -> FakeControllerTransport {
        var model = FakeControllerModel()
        model.leFeatures = [.leEncryption]
        let enables = Atomic<Int>(0)
        return FakeControllerTransport(model: model) { opcode, fake in
            guard opcode == .leSetScanEnable, enables.add(1, ordering: .relaxed).newValue == 1 else { return }
            fake.injectEvent(eventBytes(LEAdvertisingReportEvent.Owned(reports)))
        }
    }

    func report(_ last: UInt8, name: String? = nil, services: [UInt16] = []) -> LR {
        LR(eventType: .advInd, address: at(last), data: device(last, name: name, services: services).advertisingData, rssi: -50)
    }

    func at(_ last: UInt8) -> LEAddress { LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, last), type: .random) }

    @Test func everyTargetOnOneScanAnUntypedAddressAssumedPublic() async throws {
        let fake = controller([report(1, name: "Cuff-7"), report(2, services: [0x1809]), report(3, name: "Thermo-1"),
                               report(4, name: "Thermo-1b")])
        let host = try await HCIHost.open(transport: fake)
        let unheard = BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 9)
        let typed = LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 8), type: .random)
        let dir = DeviceDirectory([.name("thermo-1"), .service(BluetoothUUID(0x1809)), .address(typed), .untypedAddress(unheard)])
        let told = Mutex<[Int]>([])
        let found = try await dir.find(on: host, timeout: .milliseconds(300)) { i, _ in told.withLock { $0.append(i) } }
        #expect(found.map(\.address) == [at(3), at(2), typed, LEAddress(unheard, type: .public)])
        #expect(found.map(\.assumedPublic) == [false, false, false, true])
        #expect(found[0].advertisement?.name == "Thermo-1", "the report that found it")
        #expect(told.withLock { $0 }.sorted() == [0, 1])
        _ = try await host.send(ReadBDADDRCommand())
        #expect(fake.commands.filter { $0 == .leSetScanEnable }.count == 2, "one scan, enabled and disabled: \(fake.commands)")
        await host.close()
    }

    @Test func returnsAsSoonAsAllAreFound() async throws {
        let fake = controller([report(1, name: "Cuff-7"), report(3, name: "Thermo-1")])
        let host = try await HCIHost.open(transport: fake)
        let dir = DeviceDirectory([.name("Thermo-1"), .untypedAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 1))])
        let start = ContinuousClock.now
        let found = try await dir.find(on: host, timeout: .seconds(30))
        #expect(ContinuousClock.now - start < .seconds(10), "not the whole timeout")
        #expect(found.map(\.address) == [at(3), at(1)], "the untyped address gets the type heard")
        await host.close()
    }

    @Test func aNameNotHeardIsNamedAndTheScanStops() async throws {
        let fake = controller([report(3, name: "Thermo-1")])
        let host = try await HCIHost.open(transport: fake)
        let dir = DeviceDirectory([.name("Thermo-1"), .name("Cuff"), .service(BluetoothUUID(0x1810))])
        do {
            _ = try await dir.find(on: host, timeout: .milliseconds(200))
            Issue.record("found what is not there")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.message == "no \"Cuff\", no device with service 1810 found in 0.2 s of scanning", "\(error.message)")
        }
        _ = try await host.send(ReadBDADDRCommand())
        #expect(fake.commands.filter { $0 == .leSetScanEnable }.count == 2)
        await host.close()
    }
}
