import BluetoothHost
import BluetoothLE
import BluetoothSecurity
import BluetoothWire
import FakeController
import Testing

/// The address a peripheral advertises from, chosen in one place for `serve`, `chat`,
/// `l2cap listen` and PeripheralManager (Core Vol 6 Part B §1.3), on a fake controller with
/// and without a public address.
@Suite struct AdvertisingAddressTests {
    func host(address: BluetoothAddress) async throws -> HCIHost {
        var model = FakeControllerModel()
        model.address = address
        return try await HCIHost.open(transport: FakeControllerTransport(model: model, onCommand: { _, _ in }), options: HostOptions())
    }

    @Test func aControllerWithAPublicAddressAdvertisesFromIt() async throws {
        let h = try await host(address: BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66))
        let chosen = try h.advertisingAddress(.automatic)
        #expect(chosen.own == .public && chosen.address == LEAddress(BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66), type: .public))
        let random = try h.advertisingAddress(.randomStatic)
        #expect(random.address.kind == .randomStatic, "asked for: \(random.address)")
        await h.close()
    }

    @Test func withoutAPublicAddressARandomStaticOneNeverZero() async throws {
        let h = try await host(address: .zero)
        let chosen = try h.advertisingAddress(.automatic)
        #expect(chosen.address.kind == .randomStatic && chosen.address.address != .zero, "\(chosen.address)")
        guard case .randomStatic(let a) = chosen.own else {
            Issue.record("not random static: \(chosen.own)")
            await h.close()
            return
        }
        #expect(a == chosen.address.address)
        await h.close()
    }

    @Test func privacyMakesAnAddressItsIRKResolvesAndNeedsAPublicIdentity() async throws {
        let irk: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B
        let h = try await host(address: BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66))
        let chosen = try h.advertisingAddress(.privateAddress(irk: irk))
        #expect(chosen.address.kind == .resolvablePrivate && ResolvablePrivateAddress.resolves(chosen.address.address, irk: irk))
        await h.close()
        let none = try await host(address: .zero)
        #expect(throws: BluetoothError.self) { try none.advertisingAddress(.privateAddress(irk: irk)) }
        await none.close()
    }
}
