// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE
// Fuzz target: the device directory as hostile advertisers drive it: each record is one
// report (address byte, whether it claims a resolved identity, then up to 31 bytes of AD
// data of the attacker's choosing) or time passing. Checked: a target once found keeps its
// address, only a device the query matches is taken, a partial name match waits its time.
import BluetoothLE

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let targets: [DeviceTarget] = [.name("Thermo"), .name("a"), .untypedAddress(BluetoothAddress(0xC0, 0, 0, 0, 0, 1)),
                                   .service(BluetoothUUID(0x1809)), .address(LEAddress(BluetoothAddress(0xC0, 0, 0, 0, 0, 2), type: .random))]
    let dir = DeviceDirectory(targets)
    var found: [LEAddress?] = targets.map { if case .address(let a) = $0 { a } else { nil } }
    // Per target: the addresses that ever matched it (exactly, or by a contained name).
    var matchedBy: [Set<LEAddress>] = targets.map { _ in [] }
    var exactBy: [Set<LEAddress>] = targets.map { _ in [] }
    var firstPartial: [UInt64?] = targets.map { _ in nil }
    var now: UInt64 = 0
    var i = 0
    func record(_ f: [(index: Int, address: LEAddress)]) {
        for (t, a) in f {
            precondition(found[t] == nil, "target \(t) found twice")
            found[t] = a
            if case .address(let typed) = targets[t] { precondition(typed == a); continue }
            precondition(matchedBy[t].contains(a), "took a device that never matched")
            if !exactBy[t].contains(a), let since = firstPartial[t] {
                precondition(now >= since + DeviceDirectory.partialMatchWait, "a partial name match taken early")
            }
        }
    }
    while i + 2 <= bytes.count {
        let head = bytes[i], n = Int(bytes[i + 1] % 32)
        i += 2
        if head & 0x80 != 0 {
            now += UInt64(head & 0x7F) * 100_000_000
            record(dir.promote(now: now))
            continue
        }
        let ad = Array(bytes[i ..< min(bytes.count, i + n)])
        i += n
        var d = DiscoveredDevice(address: LEAddress(BluetoothAddress(0xC0, 0, 0, 0, 0, head & 0x0F), type: head & 0x10 != 0 ? .random : .public),
                                 rssi: nil, txPower: nil, advertisingData: ad, scanResponseData: [],
                                 eventType: AdvertisingEventInfo(connectable: true), firstSeen: now, lastSeen: now, reportCount: 1)
        if head & 0x20 != 0 { d.identity = LEAddress(BluetoothAddress(0xC0, 0, 0, 0, 0, 1), type: .public) }
        for (t, target) in targets.enumerated() where found[t] == nil {
            let m = target.query?.match(d) ?? .none
            if m == .partial, firstPartial[t] == nil { firstPartial[t] = now }
            if m != .none { matchedBy[t].insert(d.address) }
            if m == .exact { exactBy[t].insert(d.address) }
        }
        let r = dir.note(d, now: now)
        record(r.found)
        precondition(dir.allFound == found.allSatisfy { $0 != nil })
    }
    return 0
}
