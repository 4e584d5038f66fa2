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
        var waiters: [(index: Int, continuation: CheckedContinuation<LEAddress, any Error>)] = []
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
            for (i, t) in targets.enumerated() where s.found[i] == nil {
                guard let query = t.query else { continue }
                switch query.match(d) {
                case .exact:
                    s.found[i] = d.address
                    out.found.append((i, d.address))
                case .partial where s.partial[i] == nil:
                    s.partial[i] = (d.address, now)
                    out.promoteAt = now + Self.partialMatchWait
                case .partial, .none:
                    break
                }
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
            if let p = s.partial[i], now >= p.since + partialMatchWait {
                s.found[i] = p.address
                out.append((i, p.address))
            }
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
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<LEAddress, any Error>) in
                let now: LEAddress?? = state.withLock { s in
                    if Task.isCancelled { return .some(nil) }
                    if let a = s.found[index] { return .some(a) }
                    s.waiters.append((index, c))
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
            let gone: [CheckedContinuation<LEAddress, any Error>] = state.withLock { s in
                var out: [CheckedContinuation<LEAddress, any Error>] = []
                s.waiters.removeAll { w in
                    guard w.index == index else { return false }
                    out.append(w.continuation)
                    return true
                }
                return out
            }
            for c in gone { c.resume(throwing: CancellationError()) }
        }
    }
}
