import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothWire
import FakeController
import Synchronization
import Testing

/// The application layer's follower against a second host of ours serving GATT, the two
/// meeting on a FakeAir: connect, discover, subscribe, every value in order, and connecting
/// again when the device comes back.
@Suite struct DeviceFollowerTests {
    static let heartRate = BluetoothUUID(0x2A37)
    static let battery = BluetoothUUID(0x2A19)

    /// The device: a host advertising a heart-rate and battery server on the air.
    struct Device {
        let host: HCIHost
        let server: GATTServer
        let serving: Task<HostError?, Never>
        var heartRateHandle: UInt16

        static func start(on air: FakeAir) async throws -> Device {
            let host = try await HCIHost.open(transport: air.peripheral)
            let server = try GATTServer(services: [
                .genericAccess(deviceName: "Pulse"),
                .genericAttribute(),
                GATTLocalService(uuid: BluetoothUUID(0x180D), characteristics: [
                    GATTLocalCharacteristic(uuid: heartRate, properties: [.notify], value: .stored([0, 60])),
                ]),
                GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
                    GATTLocalCharacteristic(uuid: battery, properties: [.read, .notify], value: .stored([90])),
                ]),
            ])
            let serving = Task { await server.serveIncomingLinks(of: host) }
            _ = try await host.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
            let h = try #require(server.valueHandle(of: heartRate))
            return Device(host: host, server: server, serving: serving, heartRateHandle: h)
        }

        func stop() async {
            serving.cancel()
            await host.close()
        }
    }

    /// Takes follower events until `until` says so (at most `limit` events).
    static func take(_ it: inout AsyncThrowingStream<FollowEvent, any Error>.Iterator, limit: Int = 40,
                     until: (FollowEvent) -> Bool) async throws -> [FollowEvent] {
        var seen: [FollowEvent] = []
        while seen.count < limit, let e = try await it.next() {
            seen.append(e)
            if until(e) { break }
        }
        return seen
    }

    static func isSubscribed(_ e: FollowEvent, _ uuid: BluetoothUUID) -> Bool {
        if case .subscribed(let c, _) = e { c.uuid == uuid } else { false }
    }

    @Test func aFollowedDeviceHandsOverEveryValueAndIsFollowedAgainWhenItComesBack() async throws {
        let air = FakeAir()
        let device = try await Device.start(on: air)
        let central = try await HCIHost.open(transport: air.central)
        let follower = DeviceFollower(.address(air.peripheralLEAddress), via: .host(central),
                                      settings: PeerSettings(connect: ConnectSettings(timeout: .seconds(2))),
                                      plan: .everyMeasurement, reconnection: Reconnection(.afterLinkLoss))
        var events = follower.events.makeAsyncIterator()
        let first = try await Self.take(&events) { Self.isSubscribed($0, Self.battery) }
        #expect(first.contains { if case .connected = $0 { true } else { false } })
        #expect(first.contains { if case .read(let c, let v) = $0 { c.uuid == BluetoothUUID(0x2A00) && v == Array("Pulse".utf8) } else { false } },
                "the plan's read: the device name")
        #expect(first.contains { Self.isSubscribed($0, Self.heartRate) })
        // The server sees both subscriptions before it notifies.
        #expect(await eventually { device.server.subscribers(of: device.heartRateHandle).count == 1 })
        for bpm: UInt8 in 61 ... 65 { device.server.notify(device.heartRateHandle, value: [0, bpm]) }
        var values: [[UInt8]] = []
        while values.count < 5, let e = try await events.next() {
            if case .value(let c, let v, let from) = e, c.uuid == Self.heartRate {
                values.append(v.value)
                #expect(from == air.peripheralLEAddress)
            }
        }
        #expect(values == (61 ... 65).map { [0, $0] }, "every value, in order")

        // Out of range: the link is lost, the follower retries until the device is back.
        air.goOutOfRange()
        let lost = try await Self.take(&events) { if case .retrying = $0 { true } else { false } }
        guard case .retrying(let failure?, _, let pause) = lost.last else {
            Issue.record("no retry after the link loss: \(lost)")
            await follower.stop()
            return
        }
        #expect(DeviceFollower.isLinkLoss(failure) && pause == Reconnection.linkLossPause, "\(failure)")
        air.comeBack()
        _ = try await device.host.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        let again = try await Self.take(&events, limit: 80) { Self.isSubscribed($0, Self.heartRate) }
        #expect(again.contains { Self.isSubscribed($0, Self.heartRate) }, "\(again)")
        #expect(await eventually { device.server.subscribers(of: device.heartRateHandle).count == 1 })
        device.server.notify(device.heartRateHandle, value: [0, 70])
        var next: [UInt8]?
        while next == nil, let e = try await events.next() {
            if case .value(let c, let v, _) = e, c.uuid == Self.heartRate { next = v.value }
        }
        #expect(next == [0, 70])

        // stop() unsubscribes and disconnects before it returns.
        await follower.stop()
        #expect(await eventually { !air.isConnected })
        await central.close()
        await device.stop()
    }

    @Test func aDeviceThatNeverAppearsIsRetriedAsAwayOrEndsTheFollowerThatDoesNotRetry() async throws {
        let air = FakeAir()
        let central = try await HCIHost.open(transport: air.central)
        let settings = PeerSettings(connect: ConnectSettings(timeout: .milliseconds(200)))
        // Not retried: the follower ends with the connect's timeout.
        let once = DeviceFollower(.address(air.peripheralLEAddress), via: .host(central), settings: settings,
                                  plan: .everyMeasurement, reconnection: Reconnection(.never))
        do {
            for try await e in once.events { if case .value = e { Issue.record("a value from nowhere") } }
            Issue.record("ended without a failure")
        } catch {
            #expect("\(error)".contains("\(air.peripheralLEAddress.address)"), "\(error)")
            #expect(DeviceFollower.isLinkLoss(error), "a device not in range counts as away: \(error)")
        }
        // Retried after link loss: a device not in range is away, so it is tried again.
        let patient = DeviceFollower(.address(air.peripheralLEAddress), via: .host(central), settings: settings,
                                     plan: .everyMeasurement, reconnection: Reconnection(.afterLinkLoss))
        var events = patient.events.makeAsyncIterator()
        let seen = try await Self.take(&events) { if case .retrying = $0 { true } else { false } }
        guard case .retrying(_?, _, let pause) = seen.last else {
            Issue.record("no retry: \(seen)")
            await patient.stop()
            await central.close()
            return
        }
        #expect(pause == Reconnection.linkLossPause)
        await patient.stop()
        #expect(try await events.next() == nil, "stop() ends the events")
        await central.close()
    }
}
