import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothWire
import HCIGATTFormat
import Testing

@Suite struct LinkTextTests {
    private let device = LEAddress(BluetoothAddress(0xC0, 0xDE, 0, 0, 0, 1), type: .random)
    private let heartRate = GATTCharacteristic(declarationHandle: 0x10, valueHandle: 0x11, endHandle: 0x12,
                                               uuid: BluetoothUUID(0x2A37), properties: [.notify])

    @Test func aTaggedNarratorNamesTheDeviceOnceConnected() {
        var n = FollowNarrator(target: .name("Thermo"), tagged: true, retrying: .withBackoff)
        #expect(n.lines(.progress(.scanning(.name("Thermo")))) == ["scanning for \"Thermo\"..."])
        #expect(n.tag.isEmpty)
        #expect(n.lines(.subscribed(heartRate, indications: false)) == ["subscribed to 2A37 Heart Rate Measurement (notifications)"])
        #expect(n.lines(.value(heartRate, GATTValue(handle: 0x11, value: [0, 72], isIndication: false), device: device)).isEmpty,
                "values are the consumer's")
    }

    @Test func retriesAreSaidAsEachModeRetries() {
        var backoff = FollowNarrator(target: .address(device), tagged: true, retrying: .withBackoff)
        let lost = BluetoothError(.disconnected, "the link was lost")
        #expect(backoff.lines(.retrying(failure: lost, device: device, retryIn: .seconds(4)))
            == ["C0:DE:00:00:00:01: the link was lost; trying again in 4 s"])
        #expect(backoff.lines(.retrying(failure: nil, device: nil, retryIn: .seconds(1))) == ["link closed; trying again in 1 s"])
        var once = FollowNarrator(target: .address(device), tagged: false, retrying: .afterLinkLoss("reconnecting..."))
        #expect(once.lines(.retrying(failure: lost, device: device, retryIn: .zero))
            == ["C0:DE:00:00:00:01 (random-static): link lost: the link was lost; reconnecting..."])
    }

    @Test func errorsGetTheHintAUserNeeds() {
        let notFound = BluetoothError(.notFound, "no device named \"X\" found in 5 s of scanning",
                                      underlying: HostError(.commandTimeout, "scan"))
        #expect(LinkText.describe(notFound) == "no device named \"X\" found in 5 s of scanning (--scan-timeout)")
        #expect(LinkText.describe(BluetoothError(.notFound, "no such service")) == "no such service")
        #expect(LinkText.what(.service(BluetoothUUID(0x180D))) == "a device with service 180D Heart Rate")
    }

    @Test func valuesShowAsHexTextAndDecoded() {
        #expect(ValueFormat.line(BluetoothUUID(0x2A19), [0x07]) == "07  = 7 %")
        #expect(ValueFormat.line(BluetoothUUID(0x2A00), Array("Thermo".utf8)) == "54 68 65 72 6d 6f  \"Thermo\"", "a name is text, not decoded again")
        #expect(ValueFormat.line(nil, []) == "(empty)")
        #expect(ValueFormat.line(nil, [UInt8](repeating: 0xAA, count: 65)).hasSuffix("... (65 bytes)"))
        #expect(ValueFormat.text([0x00, 0x41]) == nil)
    }
}
