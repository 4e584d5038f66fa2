import BluetoothWire
import FakeController
import Testing
@testable import BluetoothHost

/// Connection parameters asked for by either side, host to host on a FakeAir.
@Suite struct LinkParametersTests {
    @Test("L2CAP/LE/CPU/BV-01-C, BV-02-C: a peripheral asks, our central accepts and updates, both links follow")
    func aPeripheralsRequestIsAcceptedAndTheLinkUpdated() async throws {
        let air = FakeAir()
        let device = try await HCIHost.open(transport: air.peripheral)
        let central = try await HCIHost.open(transport: air.central)
        var incoming = device.incomingConnections.makeAsyncIterator()
        _ = try await device.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
        let link = try await central.connect(to: air.peripheralLEAddress, timeout: .seconds(2))
        let peripheralLink = try #require(await incoming.next())
        let wished = L2CAPConnectionParameters(intervalMin: 24, intervalMax: 36, peripheralLatency: 2, timeoutMultiplier: 500)
        let state = try await peripheralLink.updateParameters(wished)
        #expect(state.interval == 36 && state.latency == 2 && state.supervisionTimeout == 500)
        // The request went over L2CAP (CID 5, code 0x12), not as an HCI command of the peripheral.
        #expect(!air.peripheral.commands.contains(.leConnectionUpdate) && air.central.commands.contains(.leConnectionUpdate))
        #expect(air.peripheral.acl.contains { aclParts($0).2.count >= 5 && aclParts($0).2[2] == 5 && aclParts($0).2[4] == 0x12 })
        #expect(await eventually { link.parameters.interval == 36 }, "the central's link has the new parameters too")
        await central.close()
        await device.close()
    }
}
