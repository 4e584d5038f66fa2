// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the gateway's scan publisher (filter, readings, presence, rate limit) as
// hostile advertisers and a jumpy clock drive it. The first byte picks the settings; each
// record is then a report (device, clock step, AD bytes) or a timer firing. Checked: a
// denied device is never published about; presence alternates present/away per device
// and a device goes away only after the timeout unheard; readings of one device and
// measurement are never closer than the minimum interval; the next deadline never lies
// in the past after the timer ran.
import HCIGATTGateway

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let s: UInt64 = 1_000_000_000
    let denied = BluetoothAddress(0xC0, 0, 0, 0, 0, 7)
    var settings = ScanPublishing(filter: ScanFilter(allow: mode & 1 != 0 ? [.namePrefix("A"), .service(BluetoothUUID(0xFCD2))] : [],
                                                     deny: [.address(denied, nil)]),
                                  onlySensors: mode & 2 != 0)
    let away = UInt64(mode >> 4 | 1) * s
    if mode & 4 != 0 { settings.awayAfter = away }
    let interval = UInt64((mode >> 2) & 3 + 1) * s
    if mode & 8 != 0 { settings.minInterval = interval }
    var now: UInt64 = 1_000 * s
    let start = now
    var publisher = ScanPublisher(settings, presentAtStart: mode & 0x80 != 0 ? [BluetoothAddress(0xC0, 0, 0, 0, 0, 1)] : [], now: now)
    var present: [BluetoothAddress: Bool] = mode & 0x80 != 0 ? [BluetoothAddress(0xC0, 0, 0, 0, 0, 1): true] : [:]
    var lastHeard: [BluetoothAddress: UInt64] = mode & 0x80 != 0 ? [BluetoothAddress(0xC0, 0, 0, 0, 0, 1): start] : [:]
    var lastReading: [String: UInt64] = [:]
    var out: [ScanPublisher.Output] = []

    func check(_ out: [ScanPublisher.Output]) {
        for o in out {
            switch o {
            case .reading(let r):
                precondition(r.device != denied, "a denied device published")
                if let interval = settings.minInterval {
                    let key = "\(r.device)/\(r.measurement)"
                    if let last = lastReading[key] { precondition(now >= last + interval, "readings closer than the interval") }
                    lastReading[key] = now
                }
            case .presence(let p):
                precondition(p.device != denied, "a denied device's presence")
                precondition(present[p.device, default: false] != p.present, "presence said twice")
                if !p.present, let heard = lastHeard[p.device], let timeout = settings.awayAfter {
                    precondition(now >= heard + timeout, "away before the timeout")
                }
                present[p.device] = p.present
            case .log:
                break
            }
        }
    }

    var i = 1
    while i + 3 <= bytes.count {
        let head = bytes[i], step = UInt64(bytes[i + 1]) * 50_000_000, n = Int(bytes[i + 2] % 32)
        i += 3
        now += step
        if head & 0x80 != 0 {
            out.removeAll()
            publisher.expire(now: now, wallMilliseconds: 0, into: &out)
            check(out)
            if let d = publisher.nextDeadline { precondition(d > now, "a deadline left in the past") }
            continue
        }
        let ad = Array(bytes[i ..< min(bytes.count, i + n)])
        i += n
        let address = BluetoothAddress(0xC0, 0, 0, 0, 0, head & 0x07)
        let d = DiscoveredDevice(address: LEAddress(address, type: .random), rssi: Int8(bitPattern: head), txPower: nil,
                                 advertisingData: ad, scanResponseData: head & 0x40 != 0 ? ad : [],
                                 eventType: AdvertisingEventInfo(), firstSeen: now, lastSeen: now, reportCount: 1)
        out.removeAll()
        publisher.report(d, now: now, wallMilliseconds: 0, into: &out)
        if settings.filter.admits(d) { lastHeard[address] = now }
        check(out)
    }
    return 0
}
