import BluetoothWire

/// What was wrong with incoming ACL fragments. Every failure drops the frame concerned;
/// the link stays usable.
public enum L2CAPReassemblyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A continuing fragment (PB 0b01) arrived with no frame being reassembled.
    case continuationWithoutStart(handle: UInt16, length: Int)
    /// A new start fragment arrived while a frame was incomplete; the incomplete one
    /// (`received` bytes so far) is dropped.
    case startWhilePending(handle: UInt16, received: Int)
    /// The fragments carried more bytes than the L2CAP Length field announced.
    case lengthOverrun(handle: UInt16, expected: Int, received: Int)
    /// The announced frame is longer than ``L2CAPReassembler/maximumFrameLength``.
    case frameTooLong(handle: UInt16, length: Int)
    /// Reassembling this frame would take the bytes held for all links over
    /// ``L2CAPReassembler/maximumPendingBytes``.
    case pendingLimitExceeded(handle: UInt16, length: Int)

    public var description: String {
        switch self {
        case .continuationWithoutStart(let h, let n):
            "link 0x\(hex(h, 4)): continuing ACL fragment (\(n) bytes) without a start"
        case .startWhilePending(let h, let n):
            "link 0x\(hex(h, 4)): new L2CAP frame started while one was incomplete (\(n) bytes dropped)"
        case .lengthOverrun(let h, let e, let r):
            "link 0x\(hex(h, 4)): ACL fragments carry \(r) bytes for an L2CAP frame of \(e)"
        case .frameTooLong(let h, let n):
            "link 0x\(hex(h, 4)): L2CAP frame of \(n) bytes is over the limit"
        case .pendingLimitExceeded(let h, let n):
            "link 0x\(hex(h, 4)): no room to reassemble an L2CAP frame of \(n) bytes"
        }
    }
}

/// Reassembles incoming ACL fragments into L2CAP basic frames, per connection handle
/// (Core Vol 4 Part E §5.4.2, Core Vol 3 Part A §7.2), sans-I/O.
///
/// A start fragment (PB 0b10, or 0b00/0b11 from lenient controllers) begins a frame whose
/// total size is the L2CAP Length + 4; continuing fragments (PB 0b01) append until it is
/// complete. A start that already holds the whole frame is delivered as a view of the
/// input, without copying. Memory is bounded: one frame per link of at most
/// ``maximumFrameLength`` bytes, and at most ``maximumPendingBytes`` over all links.
public struct L2CAPReassembler: Sendable {
    /// Largest frame accepted, header included (default 65535 + 4).
    public var maximumFrameLength: Int
    /// Bytes held for incomplete frames over all links together.
    public var maximumPendingBytes: Int

    struct Pending: Sendable {
        var buffer: [UInt8]
        /// Total frame size, once the 2-byte Length field has arrived.
        var expected: Int?
        /// What this frame counts against ``maximumPendingBytes``.
        var reserved = 0
    }

    enum LinkState: Sendable {
        case reassembling(Pending)
        /// Dropping the rest of a refused frame: this many bytes still to come.
        case discarding(remaining: Int)
    }

    private var links: [UInt16: LinkState] = [:]
    /// Bytes reserved for unfinished frames (their announced lengths, all links).
    public private(set) var pendingBytes = 0

    /// Whole frames handed over.
    public private(set) var framesDelivered = 0
    /// Reassembly failures (the fragments dropped; see `lastError`).
    public private(set) var errors = 0
    /// Why the last fragment was dropped.
    public private(set) var lastError: L2CAPReassemblyError?

    /// A reassembler taking frames up to `maximumFrameLength` (basic header included) and
    /// holding at most `maximumPendingBytes` unfinished.
    public init(maximumFrameLength: Int = 65535 + 4, maximumPendingBytes: Int = 1 << 20) {
        self.maximumFrameLength = maximumFrameLength
        self.maximumPendingBytes = maximumPendingBytes
    }

    /// True when a frame is incomplete on `handle`.
    public func isReassembling(_ handle: UInt16) -> Bool {
        if case .reassembling = links[handle] { return true }
        return false
    }

    /// Forgets the link's incomplete frame (disconnection).
    public mutating func removeLink(_ handle: UInt16) {
        if case .reassembling(let p) = links.removeValue(forKey: handle) {
            pendingBytes -= p.reserved
        }
    }

    /// Feeds one ACL fragment. `deliver` gets each complete frame (handle, channel,
    /// payload view valid during the call). Returns what went wrong, if anything (at most
    /// two: a dropped incomplete frame, then a problem with the new start).
    /// `deliver` must not call back into this reassembler.
    public mutating func append(handle: UInt16, boundary: ACLPacketBoundaryFlag, fragment: UnsafeRawBufferPointer,
                                deliver: (UInt16, L2CAPChannelID, UnsafeRawBufferPointer) -> Void) -> [L2CAPReassemblyError] {
        var failures: [L2CAPReassemblyError] = []
        if boundary.isFirst {
            switch links[handle] {
            case .reassembling(let p):
                fail(.startWhilePending(handle: handle, received: p.buffer.count), into: &failures)
                removeLink(handle)
            case .discarding:
                links[handle] = nil
            case nil:
                break
            }
            start(handle: handle, fragment: fragment, deliver: deliver, failures: &failures)
        } else {
            switch links[handle] {
            case nil:
                fail(.continuationWithoutStart(handle: handle, length: fragment.count), into: &failures)
            case .discarding(let remaining):
                if fragment.count >= remaining { links[handle] = nil } else {
                    links[handle] = .discarding(remaining: remaining - fragment.count)
                }
            case .reassembling(var p):
                links[handle] = nil  // drop the reference so the append does not copy
                let before = p.buffer.count
                pendingBytes -= p.reserved
                if let expected = p.expected, before + fragment.count > expected {
                    fail(.lengthOverrun(handle: handle, expected: expected, received: before + fragment.count), into: &failures)
                    return failures
                }
                p.buffer.append(contentsOf: fragment)
                if p.expected == nil {
                    // Only now are both Length bytes known.
                    guard continueHeader(handle: handle, pending: &p, failures: &failures) else { return failures }
                }
                finishOrKeep(handle: handle, p, deliver: deliver, failures: &failures)
            }
        }
        return failures
    }

    private mutating func start(handle: UInt16, fragment: UnsafeRawBufferPointer,
                                deliver: (UInt16, L2CAPChannelID, UnsafeRawBufferPointer) -> Void,
                                failures: inout [L2CAPReassemblyError]) {
        guard let length = L2CAPBasicFrame.payloadLength(ofHeader: fragment) else {
            // Not even the Length field yet: keep the byte(s) and wait.
            keep(handle: handle, Pending(buffer: Array(fragment), expected: nil), failures: &failures)
            return
        }
        let total = length + L2CAPBasicFrame.headerLength
        if total > maximumFrameLength {
            fail(.frameTooLong(handle: handle, length: total), into: &failures)
            if fragment.count < total { links[handle] = .discarding(remaining: total - fragment.count) }
            return
        }
        if fragment.count == total {
            framesDelivered += 1
            deliver(handle, Self.channel(fragment), UnsafeRawBufferPointer(rebasing: fragment[4...]))
            return
        }
        if fragment.count > total {
            fail(.lengthOverrun(handle: handle, expected: total, received: fragment.count), into: &failures)
            return
        }
        var buffer = [UInt8]()
        buffer.reserveCapacity(total)
        buffer.append(contentsOf: fragment)
        keep(handle: handle, Pending(buffer: buffer, expected: total), failures: &failures)
    }

    /// The Length field completed in a continuation: check it like a start would.
    private mutating func continueHeader(handle: UInt16, pending p: inout Pending,
                                         failures: inout [L2CAPReassemblyError]) -> Bool {
        guard p.buffer.count >= 2 else { return true }
        let total = Int(UInt16(p.buffer[0]) | UInt16(p.buffer[1]) << 8) + L2CAPBasicFrame.headerLength
        if total > maximumFrameLength {
            fail(.frameTooLong(handle: handle, length: total), into: &failures)
            if p.buffer.count < total { links[handle] = .discarding(remaining: total - p.buffer.count) }
            return false
        }
        if p.buffer.count > total {
            fail(.lengthOverrun(handle: handle, expected: total, received: p.buffer.count), into: &failures)
            return false
        }
        p.expected = total
        return true
    }

    private mutating func finishOrKeep(handle: UInt16, _ p: Pending,
                                       deliver: (UInt16, L2CAPChannelID, UnsafeRawBufferPointer) -> Void,
                                       failures: inout [L2CAPReassemblyError]) {
        if let expected = p.expected, p.buffer.count == expected {
            framesDelivered += 1
            p.buffer.withUnsafeBytes { b in
                deliver(handle, Self.channel(b), UnsafeRawBufferPointer(rebasing: b[4...]))
            }
            return
        }
        keep(handle: handle, p, failures: &failures)
    }

    private mutating func keep(handle: UInt16, _ p: Pending, failures: inout [L2CAPReassemblyError]) {
        var p = p
        let size = max(p.expected ?? 0, p.buffer.count)
        guard pendingBytes + size <= maximumPendingBytes else {
            fail(.pendingLimitExceeded(handle: handle, length: size), into: &failures)
            if let e = p.expected, e > p.buffer.count { links[handle] = .discarding(remaining: e - p.buffer.count) }
            return
        }
        p.reserved = size
        pendingBytes += size
        links[handle] = .reassembling(p)
    }

    private mutating func fail(_ e: L2CAPReassemblyError, into failures: inout [L2CAPReassemblyError]) {
        errors += 1
        lastError = e
        failures.append(e)
    }

    private static func channel(_ frame: UnsafeRawBufferPointer) -> L2CAPChannelID {
        L2CAPChannelID(rawValue: UInt16(frame[2]) | UInt16(frame[3]) << 8)
    }
}
