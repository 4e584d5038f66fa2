import BluetoothWire
import Synchronization

/// An LE credit-based L2CAP channel (Core Vol 3 Part A §4.22–4.24, §10.1): a stream of
/// SDUs each way, the transport behind CoreBluetooth's `CBL2CAPChannel`. Open one with
/// ``LEConnection/openL2CAPChannel(psm:parameters:)``, accept them with
/// ``HCIHost/listenL2CAP(psm:parameters:security:)``.
///
/// Received SDUs come from ``sdus`` in order; the peer gets credits back as they are taken,
/// so a slow reader slows the sender and nothing piles up beyond what was granted.
/// ``send(_:)`` returns once the SDU left in K-frames, waiting for the peer's credits.
public final class L2CAPChannel: Sendable, CustomStringConvertible {
    /// How both sides settled the channel (CIDs, MTUs, MPS).
    public let info: L2CAPChannelInfo
    /// The link the channel is on.
    public let connection: LEConnection

    struct State {
        var buffer: [(sdu: [UInt8], frames: Int)] = []
        var waiter: CheckedContinuation<[UInt8]?, Never>?
        var end: L2CAPChannelEnd?
    }

    let state = Mutex(State())

    init(info: L2CAPChannelInfo, connection: LEConnection) {
        self.info = info
        self.connection = connection
    }

    /// The PSM (SPSM) it connects.
    public var psm: UInt16 { info.spsm }
    /// The largest SDU the peer takes (``send(_:)`` refuses more).
    public var peerMTU: Int { Int(info.peerMTU) }
    /// Why it closed; nil while open.
    public var end: L2CAPChannelEnd? { state.withLock { $0.end } }

    public var description: String {
        "L2CAP channel PSM 0x\(hex(info.spsm, 4)) (CID 0x\(hex(info.localCID, 4)) ↔ 0x\(hex(info.peerCID, 4))) with \(connection.address)"
    }

    /// The SDUs received, in order; ends (returns nil) once the channel closed and every
    /// SDU before that was taken; ``end`` then says why.
    public var sdus: SDUs { SDUs(channel: self) }

    /// The SDUs received, in order; each one read gives its credits back to the peer.
    public struct SDUs: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let channel: L2CAPChannel
        public func makeAsyncIterator() -> Iterator { Iterator(channel: channel) }

        /// Iterates the SDUs: nil once the channel closed and nothing is left.
        public struct Iterator: AsyncIteratorProtocol {
            let channel: L2CAPChannel
            public mutating func next() async -> [UInt8]? { await channel.take() }
        }
    }

    func take() async -> [UInt8]? {
        enum Step { case sdu([UInt8], Int), end, wait }
        let step: Step = state.withLock { s in
            if !s.buffer.isEmpty {
                let first = s.buffer.removeFirst()
                return .sdu(first.sdu, first.frames)
            }
            return s.end != nil ? .end : .wait
        }
        switch step {
        case .sdu(let sdu, let frames):
            credit(frames)
            return sdu
        case .end:
            return nil
        case .wait:
            // Cancelling the reading task ends the wait (nil), as AsyncStream does.
            return await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<[UInt8]?, Never>) in
                    let now: Step? = state.withLock { s in
                        if !s.buffer.isEmpty {
                            let first = s.buffer.removeFirst()
                            return .sdu(first.sdu, first.frames)
                        }
                        if s.end != nil || Task.isCancelled { return .end }
                        s.waiter = c
                        return nil
                    }
                    switch now {
                    case .sdu(let sdu, let frames)?:
                        credit(frames)
                        c.resume(returning: sdu)
                    case .end?: c.resume(returning: nil)
                    default: break
                    }
                }
            } onCancel: {
                let waiter: CheckedContinuation<[UInt8]?, Never>? = state.withLock { s in
                    defer { s.waiter = nil }
                    return s.waiter
                }
                waiter?.resume(returning: nil)
            }
        }
    }

    /// The application took an SDU of `frames` K-frames: the peer may send that many more.
    private func credit(_ frames: Int) {
        connection.driver.post(.channel(.consumed(self, frames: frames)))
    }

    /// Driver thread: an SDU arrived.
    func deliver(_ sdu: [UInt8], frames: Int) {
        let waiter: CheckedContinuation<[UInt8]?, Never>? = state.withLock { s in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.buffer.append((sdu, frames))
            return nil
        }
        if let waiter {
            credit(frames)
            waiter.resume(returning: sdu)
        }
    }

    /// Driver thread: the channel is gone.
    func finish(_ end: L2CAPChannelEnd) {
        let waiter: CheckedContinuation<[UInt8]?, Never>? = state.withLock { s in
            if s.end == nil { s.end = end }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Sends one SDU (at most ``peerMTU`` bytes): returns once all of it left in K-frames,
    /// waiting for the peer's credits as long as it takes.
    public func send(_ sdu: [UInt8]) async throws(HostError) {
        if let end { throw HostError(.disconnected(nil), "the L2CAP channel is closed: \(end)") }
        if Task.isCancelled { throw HostError(.cancelled, "sending on the L2CAP channel was cancelled") }
        let driver = connection.driver
        let token = driver.channelTokens.wrappingAdd(1, ordering: .relaxed).oldValue
        // Cancelled while waiting for credits: the caller goes on (the SDU stays queued).
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<Void, HostError>, Never>) in
                driver.post(.channel(.send(self, sdu, token: token, c)))
            }
        } onCancel: {
            driver.post(.channel(.sendCancelled(token: token)))
        }
        try result.get()
    }

    /// Disconnects the channel (the link stays).
    public func close() async {
        if end != nil { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            connection.driver.post(.channel(.close(self, c)))
        }
    }
}
