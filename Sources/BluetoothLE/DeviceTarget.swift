// The application layer's device lookup: what a user names a device by, and how it is found
// on a controller. The CLI commands, the gateway and CentralManager all go through here.

/// A device as a user names it: an address with or without its type, a name, or a service.
public enum DeviceTarget: Sendable, Hashable, CustomStringConvertible {
    /// An address with its type: connected to without scanning.
    case address(LEAddress)
    /// An address without its type: the type is learned by scanning (a bonded identity is
    /// found behind its private address); public when it is not heard.
    case untypedAddress(BluetoothAddress)
    /// A name: the exact name (ASCII case ignored), else the first name containing it.
    case name(String)
    /// The first device advertising this service.
    case service(BluetoothUUID)

    /// `AA:BB:CC:DD:EE:FF`, `AA:BB:CC:DD:EE:FF/public` or `/random`, an address as this
    /// package prints it (`AA:BB:CC:DD:EE:FF (random-static)`, what `hcigatt bonds` lists),
    /// else a name.
    public init(parsing text: String) throws(BluetoothError) {
        // (Not `text.contains(" (")`: String's contains(String) is _StringProcessing's, 1.4 MB
        // in the static binary; the parse tells an address from a name ending in ")".)
        if text.hasSuffix(")"), let typed = LEAddress(text) {
            self = .address(typed)
            return
        }
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        if let first = parts.first, first.filter({ $0 == ":" }).count == 5, let a = BluetoothAddress(first) {
            guard parts.count == 2 else {
                self = .untypedAddress(a)
                return
            }
            switch parts[1].lowercased() {
            case "public": self = .address(LEAddress(a, type: .public))
            case "random": self = .address(LEAddress(a, type: .random))
            default: throw BluetoothError(.invalidRequest, "address type is /public or /random, not '/\(parts[1])'")
            }
        } else {
            guard !text.isEmpty else { throw BluetoothError(.invalidRequest, "missing ADDR") }
            self = .name(text)
        }
    }

    /// The address given (typed or not).
    public var address: BluetoothAddress? {
        switch self {
        case .address(let a): a.address
        case .untypedAddress(let a): a
        case .name, .service: nil
        }
    }

    /// The name given.
    public var name: String? { if case .name(let n) = self { n } else { nil } }

    /// What a scan looks for (nil: a typed address needs no scan).
    public var query: DeviceQuery? {
        switch self {
        case .address: nil
        case .untypedAddress(let a): .address(a)
        case .name(let n): .name(n)
        case .service(let u): .service(u)
        }
    }

    /// "F0:F1:F2:F3:F4:01/public", "F0:F1:F2:F3:F4:01", "\"Thermo-1\"", "a device with service 1809".
    public var description: String {
        switch self {
        case .address(let a): "\(a)"
        case .untypedAddress(let a): "\(a)"
        case .name(let n): "\"\(n)\""
        case .service(let u): "a device with service \(u)"
        }
    }
}

/// Where a lookup found the device, and what a user should be told about it.
public struct FoundDevice: Sendable {
    /// The address to connect to.
    public var address: LEAddress
    /// What the scan heard (nil: a typed address, or an untyped one not heard).
    public var advertisement: DiscoveredDevice?
    /// Other devices with the same name heard while settling (the lookup took the first).
    public var sameName: [DiscoveredDevice]
    /// An untyped address that was not heard: taken as public.
    public var assumedPublic: Bool
}

extension DeviceTarget {
    /// Finds the device on `host`: a typed address at once; otherwise by scanning up to
    /// `timeout` (a name scans 300 ms more after the first exact match, to tell when it is
    /// not unique). An untyped address not heard is taken as public, as BlueZ's tools do;
    /// a name or service not heard is `.notFound`.
    public func find(on host: HCIHost, timeout: Duration) async throws(BluetoothError) -> FoundDevice {
        guard let query else {
            guard case .address(let a) = self else { throw BluetoothError(.invalidRequest, "no address") }
            return FoundDevice(address: a, advertisement: nil, sameName: [], assumedPublic: false)
        }
        do throws(HostError) {
            let settle: Duration = if case .name = self { .milliseconds(300) } else { .zero }
            let (d, others) = try await host.findDevice(query, timeout: timeout, settle: settle)
            return FoundDevice(address: d.address, advertisement: d, sameName: others, assumedPublic: false)
        } catch where error.kind == .notFound {
            if case .untypedAddress(let a) = self {
                return FoundDevice(address: LEAddress(a, type: .public), advertisement: nil, sameName: [], assumedPublic: true)
            }
            let what = if case .service(let u) = self { "device with service \(u)" } else { "\(self)" }
            throw BluetoothError(.notFound, "no \(what) found in \(Self.seconds(timeout)) s of scanning", underlying: error)
        } catch {
            throw BluetoothError(error)
        }
    }

    static func seconds(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
    }
}
