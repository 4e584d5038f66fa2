// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the gateway's broadcast readings as hostile advertisers drive them: each
// record is one report (address byte, whether it claims a resolved identity, a report age,
// then up to 31 bytes of AD data, BTHome or Ruuvi or anything) from one of 16 devices, one
// of which has a bind key. Checked: a reading never repeats the device's previous frame,
// carries the device's identity (or address), is never timed after the wall clock, and a
// refusal is said at most once per device.
import HCIGATTGateway

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var keys = SensorKeys()
    keys.set([0x23, 0x1d, 0x39, 0xc1, 0xd7, 0xcc, 0x1a, 0xb1, 0xae, 0xe2, 0x24, 0xcd, 0x09, 0x6d, 0xb9, 0x32],
             for: BluetoothAddress(0xC0, 0, 0, 0, 0, 3))
    var readings = BroadcastReadings(keys: keys)
    let identity = LEAddress(BluetoothAddress(0x00, 0x1B, 0xDC, 0, 0, 1), type: .public)
    var refused: Set<BluetoothAddress> = []
    var now: UInt64 = 1_000_000_000_000
    let wall: Int64 = 1_700_000_000_000
    var i = 0
    while i + 3 <= bytes.count {
        let head = bytes[i], age = UInt64(bytes[i + 1]) * 10_000_000, n = Int(bytes[i + 2] % 32)
        i += 3
        let ad = Array(bytes[i ..< min(bytes.count, i + n)])
        i += n
        now += 1_000_000
        var d = DiscoveredDevice(address: LEAddress(BluetoothAddress(0xC0, 0, 0, 0, 0, head & 0x0F), type: head & 0x10 != 0 ? .random : .public),
                                 rssi: -50, txPower: nil, advertisingData: ad, scanResponseData: head & 0x40 != 0 ? ad : [],
                                 eventType: AdvertisingEventInfo(), firstSeen: now - age, lastSeen: now - age, reportCount: 1)
        if head & 0x20 != 0 { d.identity = identity }
        let expected = d.identity?.address ?? d.address.address
        switch readings.reading(d, now: now, wallMilliseconds: wall) {
        case .reading(let r):
            precondition(r.device == expected && r.info.address == expected)
            precondition(r.milliseconds <= wall && r.milliseconds >= wall - Int64(age / 1_000_000))
            precondition(!r.fields.contains { $0.name == "error" }, "a refused frame published")
            // The same report again is never a new reading.
            if case .reading = readings.reading(d, now: now, wallMilliseconds: wall) { preconditionFailure("repeated") }
        case .notPublished(let why):
            precondition(refused.insert(expected).inserted, "refusal said twice: \(why)")
        case .unchanged:
            break
        }
    }
    return 0
}
