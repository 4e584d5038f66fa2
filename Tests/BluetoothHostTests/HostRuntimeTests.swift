import FakeController
import Testing
@testable import BluetoothHost
import BluetoothTransport
import BluetoothWire
import Synchronization

@Suite struct HostRuntimeTests {
    typealias LR = LEAdvertisingReportEvent.Owned.Report
    typealias ER = LEExtendedAdvertisingReportEvent.Owned.Report

    @Test func openRunsTheInitSequenceAndCommandsWork() async throws {
        let fake = FakeControllerTransport()
        let packets = Atomic<Int>(0)
        let host = try await HCIHost.open(transport: fake, options: .init(packetObserver: { _, _ in
            packets.wrappingAdd(1, ordering: .relaxed)
        }))
        #expect(host.info.address == BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66))
        #expect(host.info.supportsExtendedScanning)
        #expect(fake.commands == [.reset, .readLocalVersionInformation, .readBDADDR, .readLocalSupportedCommands,
                                  .readLocalSupportedFeatures, .leReadLocalSupportedFeatures, .leReadBufferSizeV2,
                                  .setEventMask, .leSetEventMask])
        let r = try await host.send(ReadBDADDRCommand())
        #expect(try r.decode(as: HCIReadBDADDRReturn.self).bdAddr == host.info.address)
        await host.close()
        #expect(fake.isClosed)
        #expect(packets.load(ordering: .relaxed) == 20)  // 10 commands + 10 answers
        let stats = host.statistics
        #expect(stats.packetsIn == 10 && stats.packetsOut == 10 && stats.commandsSent == 10)
        // After close, commands fail at once.
        await #expect(throws: HostError.self) { try await host.send(ReadBDADDRCommand()) }
    }

    @Test func controllerThatNeverAnswersGivesTheTimeoutError() async throws {
        var model = FakeControllerModel()
        model.silent = [.leSetPHY]
        let fake = FakeControllerTransport(model: model)
        let host = try await HCIHost.open(transport: fake, options: .init(commandTimeout: .milliseconds(100)))
        do {
            _ = try await host.send(LESetPHYCommand(connectionHandle: 1, txPHYs: .le1M, rxPHYs: .le1M))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.kind == .commandTimeout)
            #expect(error.message == "controller did not answer HCI_LE_Set_PHY (0x2032) within 100 ms")
        }
        // The queue is not wedged.
        _ = try await host.send(ReadBDADDRCommand())
        #expect(host.statistics.commandTimeouts == 1)
        await host.close()
    }

    @Test func failedStatusThrowsCommandFailed() async throws {
        var model = FakeControllerModel()
        model.failing = [.leSetRandomAddress: .invalidHCICommandParameters]
        let fake = FakeControllerTransport(model: model)
        let host = try await HCIHost.open(transport: fake)
        do {
            _ = try await host.send(LESetRandomAddressCommand(randomAddress: BluetoothAddress(0xC0, 1, 2, 3, 4, 5)))
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .commandFailed(.invalidHCICommandParameters))
            #expect(error.message == "HCI_LE_Set_Random_Address (0x2005) failed: Invalid HCI Command Parameters (0x12)")
        }
        await host.close()
    }

    @Test func extendedScanDeliversDevicesAndEndsWhenTheControllerCloses() async throws {
        let fake = FakeControllerTransport { opcode, fake in
            guard opcode == .leSetExtendedScanEnable else { return }
            let advType = LEExtendedAdvertisingEventType(connectable: true, scannable: true, legacy: true)
            let rspType = LEExtendedAdvertisingEventType(connectable: true, scannable: true, scanResponse: true, legacy: true)
            fake.injectEvent(extendedReportEvent([
                ER(eventType: advType, address: addr(1), rssi: -40, data: ad(services16: [0x180D])),
                ER(eventType: rspType, address: addr(1), rssi: -40, data: ad(name: "Pulse", flags: nil)),
            ]))
            fake.closeController()
        }
        let host = try await HCIHost.open(transport: fake)
        var events: [ScanEvent] = []
        do {
            for try await e in host.scan(ScanConfiguration()) { events.append(e) }
            Issue.record("the stream should end with an error")
        } catch let e as HostError {
            #expect(e.kind == .transportClosed)
        }
        // The advertisement waited for its scan response: one discovery with both.
        #expect(events.count == 1)
        guard case .discovered? = events.first else { Issue.record("expected a discovery"); return }
        #expect(events.last?.device.name == "Pulse")
        #expect(events.last?.device.serviceUUIDs == [BluetoothUUID(0x180D)])
        #expect(fake.commands.suffix(2) == [.leSetExtendedScanParameters, .leSetExtendedScanEnable])
        // Everything after the transport closed fails at once instead of hanging.
        do {
            _ = try await host.send(ReadBDADDRCommand())
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .transportClosed)
        }
        #expect(host.statistics.reports == 2)
        await host.close()
    }

    @Test func legacyScanAndCancellationDisablesScanning() async throws {
        var model = FakeControllerModel()
        model.leFeatures = [.leEncryption]  // no extended advertising: legacy commands
        let fake = FakeControllerTransport(model: model) { opcode, fake in
            guard opcode == .leSetScanEnable else { return }
            fake.injectEvent(legacyReportEvent([
                LR(eventType: .advInd, address: addr(2), data: ad(name: "One"), rssi: -50),
                LR(eventType: .advInd, address: addr(3), data: ad(name: "Two"), rssi: -60),
            ]))
        }
        let host = try await HCIHost.open(transport: fake)
        #expect(!host.info.supportsExtendedScanning)
        var names: [String] = []
        for try await e in host.scan(ScanConfiguration(active: false)) {
            names.append(e.device.name ?? "?")
            if names.count == 2 { break }
        }
        #expect(names == ["One", "Two"])
        // The stream was dropped: the driver disables scanning. A command round trip
        // after that proves the disable went out first (requests are handled in order).
        _ = try await host.send(ReadBDADDRCommand())
        #expect(fake.commands.suffix(4) == [.leSetScanParameters, .leSetScanEnable, .leSetScanEnable, .readBDADDR])
        await host.close()
        #expect(fake.commands.last == .readBDADDR)  // close had no scan left to disable
    }

    /// A burst of distinct advertisers much larger than the scan stream's buffer, written by
    /// a controller that waits when the host does not read: with back-pressure every one
    /// arrives, however slow the consumer starts; a transport that cannot hold unread data
    /// loses the excess, and every lost event is counted.
    @Test(arguments: [true, false]) func burstWaitsInTheTransportWhileTheConsumerIsBehind(holds: Bool) async throws {
        var model = FakeControllerModel()
        model.leFeatures = [.leEncryption]  // legacy reports
        let fake = FakeControllerTransport(model: model, holdsUnreadData: holds)
        let host = try await HCIHost.open(transport: fake)
        let total = 20_000
        let stream = host.scan(ScanConfiguration(active: false))
        _ = try await host.send(ReadBDADDRCommand())  // the scan is enabled
        // The writer blocks whenever the socketpair is full, as a TCP peer would.
        async let injected: Void = runOnOwnThread {
            for i in 0..<total {
                let a = LEAddress(BluetoothAddress(0xC0, 0x00, 0x00, 0x00, UInt8(i >> 8), UInt8(i & 0xFF)), type: .random)
                fake.injectEvent(legacyReportEvent([LR(eventType: .advNonconnInd, address: a, data: ad(name: "D\(i)"), rssi: -50)]))
            }
        }
        // The consumer starts late: until the host has read all it will (a paused host
        // 4096 and one read more; one without back-pressure everything).
        var read = -1
        if holds {
            while host.statistics.reports != read {
                read = host.statistics.reports
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(read < ScanBacklog.capacity, "reading paused")
        } else {
            let deadline = ContinuousClock.now + .seconds(30)
            while host.statistics.reports < total && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(host.statistics.reports == total)
        }
        let dropped = holds ? 0 : host.statistics.droppedScanEvents
        // A stream that never delivers the rest fails the test instead of hanging it: the
        // controller goes away (which unblocks its writer) and the stream ends with an error.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            fake.closeController()
        }
        var seen = Set<LEAddress>()
        for try await e in stream {
            seen.insert(e.device.address)
            if seen.count + dropped == total { break }
        }
        watchdog.cancel()
        await injected
        _ = try await host.send(ReadBDADDRCommand())  // the statistics of every read are published
        let stats = host.statistics
        #expect(stats.reports == total)
        #expect(seen.count + stats.droppedScanEvents == total)
        if holds {
            #expect(stats.droppedScanEvents == 0)
        } else {
            #expect(stats.droppedScanEvents > 0)
        }
        await host.close()
    }

    @Test func stopScanEndsTheStreamWithoutError() async throws {
        let fake = FakeControllerTransport()
        let host = try await HCIHost.open(transport: fake)
        let stream = host.scan(ScanConfiguration())
        try await host.stopScan()
        var count = 0
        for try await _ in stream { count += 1 }
        #expect(count == 0)
        #expect(fake.commands.suffix(3) == [.leSetExtendedScanParameters, .leSetExtendedScanEnable, .leSetExtendedScanEnable])
        await host.close()
    }

    /// Found with the gateway: looking a device up by name while a scan runs was refused,
    /// and the look-up's clean-up stopped the running scan.
    @Test func aLookUpRefusedForARunningScanLeavesThatScanRunning() async throws {
        let fake = FakeControllerTransport()
        let host = try await HCIHost.open(transport: fake)
        let stream = host.scan(ScanConfiguration())
        _ = try await host.send(ReadBDADDRCommand())  // the scan is enabled by now
        let enables = fake.commands.filter { $0 == .leSetExtendedScanEnable }.count
        do {
            _ = try await host.findDevice(.name("Thermo"), timeout: .seconds(1))
            Issue.record("a second scan started")
        } catch {
            #expect(error.message.contains("already running"), "\(error)")
        }
        _ = try await host.send(ReadBDADDRCommand())
        #expect(fake.commands.filter { $0 == .leSetExtendedScanEnable }.count == enables, "the running scan was disabled")
        try await host.stopScan()
        var ended = false
        do { for try await _ in stream {}; ended = true } catch { Issue.record("unexpected error \(error)") }
        #expect(ended)
        await host.close()
    }

    @Test func closeDisablesARunningScan() async throws {
        let fake = FakeControllerTransport()
        let host = try await HCIHost.open(transport: fake)
        let stream = host.scan(ScanConfiguration())
        _ = try await host.send(ReadBDADDRCommand())  // scan enable went out before this
        await host.close()
        var ended = false
        do { for try await _ in stream {}; ended = true } catch { Issue.record("unexpected error \(error)") }
        #expect(ended)
        #expect(fake.commands.last == .leSetExtendedScanEnable)
        #expect(fake.isClosed)
    }

    @Test func scanThatCannotStartEndsWithTheError() async throws {
        var model = FakeControllerModel()
        model.failing = [.leSetExtendedScanParameters: .commandDisallowed]
        let fake = FakeControllerTransport(model: model)
        let host = try await HCIHost.open(transport: fake)
        do {
            for try await _ in host.scan(ScanConfiguration()) {}
            Issue.record("expected an error")
        } catch let e as HostError {
            #expect(e.kind == .commandFailed(.commandDisallowed))
            #expect(e.message.hasPrefix("cannot start scanning: HCI_LE_Set_Extended_Scan_Parameters (0x2041) failed"))
        }
        // A new scan can start afterwards.
        _ = try await host.send(ReadBDADDRCommand())
        await host.close()
    }

    @Test func malformedEventIsCountedNotFatal() async throws {
        let fake = FakeControllerTransport()
        let host = try await HCIHost.open(transport: fake)
        // An LE Advertising Report claiming 3 reports but holding none.
        fake.injectEvent([0x3E, 0x02, 0x02, 0x03])
        _ = try await host.send(ReadBDADDRCommand())
        #expect(host.statistics.malformedPackets == 1)
        #expect(host.statistics.lastMalformed != nil)
        await host.close()
    }

    @Test func terminatedWaitsForTheControllerToGoAndSaysWhy() async throws {
        let fake = FakeControllerTransport()
        let host = try await HCIHost.open(transport: fake)
        // A waiter that gives up (its task cancelled) gets nil and leaves nothing behind.
        let early = Task { await host.terminated() }
        early.cancel()
        #expect(await early.value == nil)
        let leaving = Task { await host.terminated() }
        let waiting = Task { await host.terminated() }
        // Both stored as waiters before one leaves and the controller goes.
        try await Task.sleep(for: .milliseconds(50))
        leaving.cancel()
        #expect(await leaving.value == nil)
        #expect(host.terminationReason == nil)
        fake.closeController()
        #expect(await waiting.value?.kind == .transportClosed)
        // Once stopped, at once; closing later changes nothing of the reason.
        #expect(await host.terminated()?.kind == .transportClosed)
        await host.close()
        #expect(host.terminationReason?.kind == .transportClosed)
    }

    @Test func openFailsWhenTheControllerIsGone() async {
        let fake = FakeControllerTransport()
        fake.closeController()
        do {
            _ = try await HCIHost.open(transport: fake)
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .transportClosed)
            #expect(fake.isClosed)
        }
    }
}
