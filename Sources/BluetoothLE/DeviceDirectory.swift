import BluetoothTransport
import Synchronization

/// Several devices looked for on one running scan (the controller runs one scan at a time,
/// so a program following several devices, like the gateway, finds them all on the scan it
/// runs anyway). Each target is matched by ``DeviceQuery/match(_:)``, the rule of every
/// lookup: an address or bonded identity, a service, an exact name at once; a name that only
/// contains the one given is taken when no exact match has come ``partialMatchWait`` after
/// it was heard. A task waits for its target's address with ``address(of:)``.
public final class DeviceDirectory: Sendable {
    /// How long a device whose name only contains the one given waits for an exact match.
    public static let partialMatchWait: UInt64 = 2_000_000_000

    private struct State {
        var found: [LEAddress?]
        /// A device whose name contains the target's, and when it was first heard.
        var partial: [(address: LEAddress, since: UInt64)?]
        var waiters: [(id: UInt64, index: Int, continuation: CheckedContinuation<LEAddress, any Error>)] = []
        var nextWaiter: UInt64 = 0
    }

    /// The targets, in the order given.
    public let targets: [DeviceTarget]
    private let state: Mutex<State>

    /// A directory of `targets`; a typed address is found at once.
    public init(_ targets: [DeviceTarget]) {
        self.targets = targets
        state = Mutex(State(found: targets.map { if case .address(let a) = $0 { a } else { nil } },
                            partial: targets.map { _ in nil }))
    }

    /// Whether every target has its address.
    public var allFound: Bool { state.withLock { $0.found.allSatisfy { $0 != nil } } }

    /// The targets still looked for.
    public var missing: [DeviceTarget] { state.withLock { s in targets.indices.filter { s.found[$0] == nil }.map { targets[$0] } } }

    /// What one note found.
    public struct Found: Sendable {
        /// Targets found now, with their addresses (by their index in ``targets``).
        public var found: [(index: Int, address: LEAddress)] = []
        /// When ``promote(now:)`` should run to take a partial name match noted now.
        public var promoteAt: UInt64?
    }

    /// A device the scan heard at `now` (monotonic nanoseconds).
    public func note(_ d: DiscoveredDevice, now: UInt64) -> Found {
        var out = Found()
        let ready: [(CheckedContinuation<LEAddress, any Error>, LEAddress)] = state.withLock { s in
            // Exact matches first: a device that is one target's exactly is no other's candidate.
            let matches = targets.map { t in t.query?.match(d) ?? .none }
            for i in targets.indices where s.found[i] == nil && matches[i] == .exact {
                s.found[i] = d.address
                out.found.append((i, d.address))
            }
            // (A device another target has is no candidate: one device, one target.)
            for i in targets.indices where s.found[i] == nil && matches[i] == .partial
                && s.partial[i] == nil && !s.found.contains(d.address) {
                s.partial[i] = (d.address, now)
                out.promoteAt = now + Self.partialMatchWait
            }
            out.found += Self.promote(&s, now: now)
            return Self.takeReady(&s)
        }
        for (c, a) in ready { c.resume(returning: a) }
        return out
    }

    /// Takes the partial name matches that waited long enough; returns them.
    public func promote(now: UInt64) -> [(index: Int, address: LEAddress)] {
        let (found, ready) = state.withLock { s in
            let f = Self.promote(&s, now: now)
            return (f, Self.takeReady(&s))
        }
        for (c, a) in ready { c.resume(returning: a) }
        return found
    }

    private static func promote(_ s: inout State, now: UInt64) -> [(index: Int, address: LEAddress)] {
        var out: [(index: Int, address: LEAddress)] = []
        for i in s.found.indices where s.found[i] == nil {
            guard let p = s.partial[i], now >= p.since + partialMatchWait else { continue }
            s.partial[i] = nil
            // Taken meanwhile by another target's exact match: wait for another candidate.
            if s.found.contains(p.address) { continue }
            s.found[i] = p.address
            out.append((i, p.address))
        }
        return out
    }

    private static func takeReady(_ s: inout State) -> [(CheckedContinuation<LEAddress, any Error>, LEAddress)] {
        var out: [(CheckedContinuation<LEAddress, any Error>, LEAddress)] = []
        let found = s.found
        s.waiters.removeAll { w in
            guard let a = found[w.index] else { return false }
            out.append((w.continuation, a))
            return true
        }
        return out
    }

    /// The address of target `index`, once the scan has found it. Throws
    /// `CancellationError` when the waiting task is cancelled.
    public func address(of index: Int) async throws -> LEAddress {
        let id: UInt64 = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<LEAddress, any Error>) in
                let now: LEAddress?? = state.withLock { s in
                    if Task.isCancelled { return .some(nil) }
                    if let a = s.found[index] { return .some(a) }
                    s.waiters.append((id, index, c))
                    return nil
                }
                switch now {
                case .some(let a?): c.resume(returning: a)
                case .some(nil): c.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            // The flag is set before this runs: a waiter not stored yet sees it and leaves.
            let gone: CheckedContinuation<LEAddress, any Error>? = state.withLock { s in
                guard let at = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: at).continuation
            }
            gone?.resume(throwing: CancellationError())
        }
    }
}

extension DeviceDirectory {
    /// Looks for every target on one scan of `host`, up to `timeout` for all of them (one
    /// scan, not one per target: the controller runs one at a time). `found` hears each
    /// target as it is found. Returns a ``FoundDevice`` per target, in order: an untyped
    /// address not heard is taken as public, as ``DeviceTarget/find(on:timeout:)`` does; a
    /// name or service not heard is `.notFound`, naming every one missing.
    public func find(on host: HCIHost, timeout: Duration,
                     found: @escaping @Sendable (Int, LEAddress) -> Void = { _, _ in }) async throws(BluetoothError) -> [FoundDevice] {
        let scan = FindScan()
        if !allFound {
            let stream = host.scan(ScanConfiguration(scanResponseWait: .zero))
            let (promotions, promotionSignal) = AsyncStream<UInt64>.makeStream()
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        for try await event in stream {
                            let d = event.device
                            if self.targets.contains(where: { $0.query?.match(d) ?? .none != .none }) {
                                scan.heard.withLock { $0[d.address] = d }
                            }
                            let noted = self.note(d, now: monotonicNow())
                            for f in noted.found { found(f.index, f.address) }
                            if let at = noted.promoteAt { promotionSignal.yield(at) }
                            if self.allFound { return }
                        }
                    } catch let e as HostError {
                        scan.failure.withLock { $0 = e }
                    } catch {}
                }
                group.addTask {
                    // A contained name is taken once no exact match came in time.
                    for await at in promotions {
                        let now = monotonicNow()
                        if at > now { try? await Task.sleep(for: .nanoseconds(at - now)) }
                        for f in self.promote(now: monotonicNow()) { found(f.index, f.address) }
                        if self.allFound { await host.stopScan(id: stream.scanID) }
                    }
                }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
                promotionSignal.finish()
            }
            await host.stopScan(id: stream.scanID)
        }
        let addresses = state.withLock { $0.found }
        // A scan that failed heard nothing of the rest: no address is assumed then.
        if addresses.contains(nil), let e = scan.failure.withLock({ $0 }) { throw BluetoothError(e) }
        var out: [FoundDevice] = []
        var missing: [String] = []
        for (target, address) in zip(targets, addresses) {
            if let address {
                out.append(FoundDevice(address: address, advertisement: scan.heard.withLock { $0[address] }, sameName: [], assumedPublic: false))
            } else if case .untypedAddress(let a) = target {
                out.append(FoundDevice(address: LEAddress(a, type: .public), advertisement: nil, sameName: [], assumedPublic: true))
            } else {
                let what = if case .service(let u) = target { "device with service \(u)" } else { "\(target)" }
                missing.append(what)
            }
        }
        if !missing.isEmpty {
            throw BluetoothError(.notFound, "no \(missing.joined(separator: ", no ")) found in \(DeviceTarget.seconds(timeout)) s of scanning")
        }
        return out
    }
}

/// What one ``DeviceDirectory/find(on:timeout:found:)`` scan heard.
private final class FindScan: Sendable {
    /// Each candidate's latest report, to hand back its advertisement.
    let heard = Mutex<[LEAddress: DiscoveredDevice]>([:])
    let failure = Mutex<HostError?>(nil)
}
