// What the gateway's scan publishes: allow and deny lists over addresses, names, services
// and companies. Pure, so it is tested without a radio; matched once per report without
// allocating (the summary's views, small lists).
import BluetoothHost
import BluetoothWire

/// One entry of `--allow` or `--deny`.
public enum ScanFilterEntry: Sendable, Hashable, CustomStringConvertible {
    /// A device address; with a type, only that type.
    case address(BluetoothAddress, LEAddressType?)
    /// Devices whose advertised name begins with these bytes (case as given).
    case namePrefix(String)
    /// Devices that list this service or send data for it (service data: BTHome is FCD2).
    case service(BluetoothUUID)
    /// Devices whose manufacturer data is this company's (Ruuvi 0x0499, Apple 0x004C).
    case company(UInt16)

    /// The entry `text` names: `AA:BB:CC:DD:EE:FF` (any type) or with `/public` or `/random`;
    /// `service:UUID` or a bare 16-bit, 32-bit or 128-bit UUID (`FCD2`, `0x181A`);
    /// `company:0499` (hex, `0x` optional); `name:PREFIX` or any other text as a name
    /// prefix. Nil for an empty entry or a malformed tagged one.
    public init?(_ text: String) {
        if text.hasPrefix("name:") {
            let prefix = String(text.dropFirst("name:".count))
            guard !prefix.isEmpty else { return nil }
            self = .namePrefix(prefix)
        } else if text.hasPrefix("service:") {
            guard let u = BluetoothUUID(text.dropFirst("service:".count)) else { return nil }
            self = .service(u)
        } else if text.hasPrefix("company:") {
            // Hex, as company identifiers are written (and UUIDs here): 0499 is Ruuvi's.
            var id = text.dropFirst("company:".count)
            if id.hasPrefix("0x") || id.hasPrefix("0X") { id = id.dropFirst(2) }
            guard (1 ... 4).contains(id.utf8.count), let value = UInt16(id, radix: 16) else { return nil }
            self = .company(value)
        } else if text.utf8.count == 17, let a = BluetoothAddress(text) {
            self = .address(a, nil)
        } else if let typed = LEAddress(text) {
            self = .address(typed.address, typed.type)
        } else if text.utf8.count(where: { $0 == UInt8(ascii: ":") }) == 5 {
            return nil  // an address with a typo, not a name
        } else if let u = BluetoothUUID(text) {
            self = .service(u)
        } else {
            guard !text.isEmpty else { return nil }
            self = .namePrefix(text)
        }
    }

    /// How the entry reads back (`address AA:…`, `name "ATC_"`, `service FCD2`, `company 0x0499`).
    public var description: String {
        switch self {
        case .address(let a, let type?): "address \(a)/\(type == .public ? "public" : "random")"
        case .address(let a, nil): "address \(a)"
        case .namePrefix(let p): "name \"\(p)\"…"
        case .service(let u): "service \(u)"
        case .company(let c): "company 0x\(Hex.pad(UInt64(c), 4))"
        }
    }

    /// True when `device` (whose summary is `a`) matches.
    func matches(_ device: DiscoveredDevice, _ a: ADSummary) -> Bool {
        switch self {
        case .address(let address, let type):
            func same(_ heard: LEAddress?) -> Bool {
                guard let heard else { return false }
                return heard.address == address && (type == nil || type == heard.type)
            }
            return same(device.address) || same(device.identity)
        case .namePrefix(let prefix):
            guard let name = a.name else { return false }
            var p = prefix
            return p.withUTF8 { bytes in
                bytes.count <= name.count && memcmpEqual(name, bytes)
            }
        case .service(let u):
            var found = false
            a.forEachServiceUUID { if $0 == u { found = true } }
            if !found { a.forEachServiceDataUUID { if $0 == u { found = true } } }
            return found
        case .company(let c):
            return a.manufacturerData?.companyID == c
        }
    }
}

/// The first `prefix.count` bytes of `bytes` are `prefix`.
private func memcmpEqual(_ bytes: UnsafeRawBufferPointer, _ prefix: UnsafeBufferPointer<UInt8>) -> Bool {
    for i in 0 ..< prefix.count where bytes[i] != prefix[i] { return false }
    return true
}

/// What the scan publishes: a device is taken when it matches an `allow` entry (or there
/// are none) and no `deny` entry (deny wins). Followed devices (`--device`) are not
/// filtered: they were asked for by name.
public struct ScanFilter: Sendable, Hashable {
    /// Devices taken (empty: all).
    public var allow: [ScanFilterEntry]
    /// Devices never taken, even when allowed.
    public var deny: [ScanFilterEntry]

    /// A filter; empty lists take every device.
    public init(allow: [ScanFilterEntry] = [], deny: [ScanFilterEntry] = []) {
        self.allow = allow
        self.deny = deny
    }

    /// No entries: every device is taken.
    public var isEmpty: Bool { allow.isEmpty && deny.isEmpty }

    /// True when the scan publishes what `device` broadcasts.
    public func admits(_ device: DiscoveredDevice) -> Bool {
        if isEmpty { return true }
        return device.withSummary { a in
            if deny.contains(where: { $0.matches(device, a) }) { return false }
            return allow.isEmpty || allow.contains(where: { $0.matches(device, a) })
        }
    }
}
