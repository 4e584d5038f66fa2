import BluetoothWire
import Synchronization

/// What ``HCIHost/findDevice(_:timeout:)`` looks for.
public enum DeviceQuery: Sendable, Hashable, CustomStringConvertible {
    /// The device with this address (its address type is learned from its advertising),
    /// or the bonded device with this identity, behind whatever private address it uses now.
    case address(BluetoothAddress)
    /// A device with this name: an exact (case-insensitive) match, else the first whose
    /// name contains it.
    case name(String)
    /// The first device advertising this service.
    case service(BluetoothUUID)

    public var description: String {
        switch self {
        case .address(let a): "\(a)"
        case .name(let n): "\"\(n)\""
        case .service(let u): "a device with service \(u)"
        }
    }

    /// How well a device heard while scanning answers the query.
    public enum Match: Sendable, Hashable {
        case none
        /// A name containing the one looked for: taken only when no exact match comes.
        case partial
        /// The address (or the identity it resolved to), the exact name (ASCII case
        /// ignored), or the service.
        case exact
    }

    /// The one rule for "is this the device": ``HCIHost/findDevice(_:timeout:settle:)``
    /// and programs that watch a running scan for several devices use it alike.
    public func match(_ d: DiscoveredDevice) -> Match {
        switch self {
        case .address(let a):
            return d.address.address == a || d.identity?.address == a ? .exact : .none
        case .service(let u):
            return d.advertises(u) ? .exact : .none
        case .name(let wanted):
            guard let name = d.name else { return .none }
            let heard = HCIHost.lowercased(Array(name.utf8)), folded = HCIHost.lowercased(Array(wanted.utf8))
            if heard == folded { return .exact }
            return HCIHost.contains(heard, folded) ? .partial : .none
        }
    }
}

/// The outcome of a find, shared between its scan task and the caller.
private final class FindResult: Sendable {
    let value = Mutex<Result<DiscoveredDevice, HostError>?>(nil)
    /// Other devices with the same name heard while settling.
    let others = Mutex<[DiscoveredDevice]>([])
}

extension HCIHost {
    /// Scans until a device matching `query` is seen and returns it (the way a central
    /// looks up a peripheral by name or service before connecting). Throws `.notFound`
    /// when nothing matches within `timeout`, or the scan's own error. Scanning stops
    /// before this returns.
    public func findDevice(_ query: DeviceQuery, timeout: Duration) async throws(HostError) -> DiscoveredDevice {
        try await findDevice(query, timeout: timeout, settle: .zero).device
    }

    /// Like ``findDevice(_:timeout:)``, and after an exact name match scans on for `settle`
    /// to find other devices with the same name (a name is not an address: two thermometers
    /// may both be "Thermo-1"), returned as `sameName` so the caller can say which it took.
    public func findDevice(_ query: DeviceQuery, timeout: Duration, settle: Duration) async throws(HostError)
        -> (device: DiscoveredDevice, sameName: [DiscoveredDevice]) {
        var config = ScanConfiguration(scanResponseWait: .zero)
        switch query {
        case .address(let a):
            // A bonded peer with an IRK advertises from private addresses: match the identity
            // the driver resolves, so the filter cannot be the controller's address match.
            if !driver.resolvableIdentities.withLock({ $0.contains(a) }) { config.address = a }
        case .service(let u): config.services = [u]
        case .name: break
        }
        let byName = if case .name = query { true } else { false }
        let stream = scan(config)
        let result = FindResult()
        // The first exact name match starts the settle time (a child that then ends the find).
        let (matched, matchedSignal) = AsyncStream<Void>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var partial: DiscoveredDevice?
                do {
                    for try await event in stream {
                        let d = event.device
                        let match = query.match(d)
                        if match == .none { continue }
                        guard byName else {
                            result.value.withLock { $0 = .success(d) }
                            return
                        }
                        if match == .exact {
                            let first: DiscoveredDevice? = result.value.withLock { r in
                                if case .success(let f)? = r { return f }
                                r = .success(d)
                                return nil
                            }
                            if let first {
                                if d.address != first.address {
                                    result.others.withLock { o in if !o.contains(where: { $0.address == d.address }) { o.append(d) } }
                                }
                                continue
                            }
                            if settle == .zero { return }
                            matchedSignal.yield()
                            continue
                        }
                        if partial == nil { partial = d }
                    }
                } catch let e as HostError {
                    result.value.withLock { $0 = $0 ?? .failure(e) }
                } catch {
                    result.value.withLock { $0 = $0 ?? .failure(HostError(.cancelled, "scanning failed: \(error)")) }
                }
                if let partial { result.value.withLock { $0 = $0 ?? .success(partial) } }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask {
                for await _ in matched {
                    try? await Task.sleep(for: settle)
                    return
                }
            }
            await group.next()
            group.cancelAll()
            matchedSignal.finish()
        }
        // Its own scan only: when another was running, this one never started.
        await stopScan(id: stream.scanID)
        if let r = result.value.withLock({ $0 }) { return (try r.get(), result.others.withLock { $0 }) }
        throw HostError(.notFound, "no \(query) found in \(timeout) of scanning")
    }

    /// ASCII case folding (names are compared byte-wise: no String search, which would
    /// link the regex engine into the embedded binary).
    public static func lowercased(_ b: [UInt8]) -> [UInt8] { b.map { (0x41 ... 0x5A).contains($0) ? $0 | 0x20 : $0 } }

    static func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= hay.count else { return false }
        for start in 0 ... hay.count - needle.count where hay[start ..< start + needle.count].elementsEqual(needle) { return true }
        return false
    }
}
