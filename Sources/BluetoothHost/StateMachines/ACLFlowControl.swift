import BluetoothWire

/// One HCI ACL Data packet ready to be written, with its H4 indicator.
public struct OutgoingACLPacket: Sendable, Equatable {
    /// The link (Connection_Handle) the packet goes on.
    public var handle: UInt16
    /// H4 packet: 0x02, ACL header, data.
    public var packet: [UInt8]
    /// L2CAP bytes of this fragment that the sender asked to be told about (its frame was
    /// enqueued with `accounted: true`); 0 otherwise. The fragments of one frame add up to
    /// the frame's length.
    public var accountedBytes: Int

    /// A packet for `handle`; `accountedBytes` as below.
    public init(handle: UInt16, packet: [UInt8], accountedBytes: Int = 0) {
        self.handle = handle
        self.packet = packet
        self.accountedBytes = accountedBytes
    }
}

/// Why ``ACLFlowControl`` refused a frame.
public enum ACLFlowError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No link with this handle (never added, or already disconnected).
    case unknownHandle(UInt16)
    /// The link's queue already holds ``ACLFlowControl/maximumQueuedBytesPerLink`` bytes.
    case queueFull(UInt16)
    /// The frame is longer than an L2CAP basic frame can be (65535 + 4 bytes).
    case frameTooLong(Int)

    public var description: String {
        switch self {
        case .unknownHandle(let h): "no link with handle 0x\(hex(h, 4))"
        case .queueFull(let h): "the send queue of link 0x\(hex(h, 4)) is full"
        case .frameTooLong(let n): "L2CAP frame of \(n) bytes is longer than 65539"
        }
    }
}

/// Host → controller ACL data flow control for LE links (Core Vol 4 Part E §4.1.1),
/// sans-I/O.
///
/// - The controller has ``bufferCount`` LE ACL buffers of ``bufferLength`` bytes
///   (HCI_LE_Read_Buffer_Size). The host sends a packet only while a buffer is free; each
///   HCI_Number_Of_Completed_Packets returns buffers per handle.
/// - Outgoing L2CAP frames are fragmented to ``bufferLength``: the first fragment has
///   Packet_Boundary_Flag 0b00 (first non-automatically-flushable), the rest 0b01
///   (continuing) (Core Vol 4 Part E §5.4.2).
/// - Each link has its own FIFO queue; links take turns one packet at a time so a long
///   write on one link does not starve another.
/// - When a link disconnects, the controller frees the buffers its unsent packets held
///   (Core Vol 4 Part E §4.3): ``removeLink(_:)`` returns them.
/// - Completions for an unknown handle, or more than were in flight, are counted and ignored.
public struct ACLFlowControl: Sendable {
    /// Largest ACL data length the controller takes in one packet.
    public let bufferLength: Int
    /// Number of LE ACL buffers.
    public let bufferCount: Int
    /// Bytes a link may have waiting for buffers before ``enqueue(_:handle:accounted:)`` refuses.
    public var maximumQueuedBytesPerLink: Int
    /// Buffers currently free in the controller.
    public private(set) var freeBuffers: Int

    struct Queued: Sendable {
        var packet: [UInt8]
        var accountedBytes: Int
    }

    struct Link: Sendable {
        var queue: [Queued] = []
        var head = 0
        var queuedBytes = 0
        var inFlight = 0
        var isEmpty: Bool { head == queue.count }

        mutating func append(_ fragments: [([UInt8], Int)], frameBytes: Int, accounted: Bool) {
            if head > 0 && head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            for (packet, bytes) in fragments {
                queue.append(Queued(packet: packet, accountedBytes: accounted ? bytes : 0))
            }
            queuedBytes += frameBytes
        }

        /// The head packet, now in flight; nil when nothing is queued. `more`: packets left.
        mutating func takeHead() -> (packet: Queued, more: Bool)? {
            guard !isEmpty else { return nil }
            let q = queue[head]
            queue[head].packet = []
            head += 1
            inFlight += 1
            queuedBytes -= q.packet.count - 5
            if isEmpty {
                queue.removeAll(keepingCapacity: true)
                head = 0
                return (q, false)
            }
            return (q, true)
        }
    }

    /// Mutated in place only (`links[h]?.…`): a copy of a Link taken out and written back
    /// shares its queue's buffer, so the first change copies the whole queue, making a long
    /// queue (a bulk transfer's) cost O(queued) per packet.
    private var links: [UInt16: Link] = [:]
    /// Handles with queued packets, in turn order.
    private var ready: [UInt16] = []

    /// Number_Of_Completed_Packets entries for a handle we do not know.
    public private(set) var unknownHandleCompletions = 0
    /// Completed packets beyond what was in flight on that handle.
    public private(set) var excessCompletions = 0
    /// Packets handed out for sending.
    public private(set) var packetsSent = 0

    /// A controller that reports 0 buffers cannot be talked to; the minimum LE values
    /// (27 bytes, 1 buffer) are used instead so the host still makes progress.
    public init(bufferLength: UInt16, bufferCount: UInt16, maximumQueuedBytesPerLink: Int = 256 * 1024) {
        self.bufferLength = bufferLength == 0 ? 27 : Int(bufferLength)
        self.bufferCount = bufferCount == 0 ? 1 : Int(bufferCount)
        self.maximumQueuedBytesPerLink = maximumQueuedBytesPerLink
        self.freeBuffers = self.bufferCount
    }

    /// Flow control for the controller's LE ACL buffers as the init sequence read them.
    public init(info: ControllerInfo) {
        self.init(bufferLength: info.aclBufferLength, bufferCount: info.aclBufferCount)
    }

    /// Packets in flight (sent, not yet completed) on `handle`.
    public func inFlight(_ handle: UInt16) -> Int { links[handle]?.inFlight ?? 0 }
    /// Packets waiting for a buffer on `handle`.
    public func queuedPackets(_ handle: UInt16) -> Int {
        guard let l = links[handle] else { return 0 }
        return l.queue.count - l.head
    }
    /// Whether `handle` is a link this flow control knows (added, not yet removed).
    public func hasLink(_ handle: UInt16) -> Bool { links[handle] != nil }

    /// Starts tracking a link (after its Connection Complete).
    public mutating func addLink(_ handle: UInt16) {
        if links[handle] == nil { links[handle] = Link() }
    }

    /// The link is gone (Disconnection Complete): its queue is dropped and the buffers its
    /// packets held are free again. Returns packets of other links that can go now.
    public mutating func removeLink(_ handle: UInt16) -> [OutgoingACLPacket] {
        guard let link = links.removeValue(forKey: handle) else { return [] }
        freeBuffers = min(bufferCount, freeBuffers + link.inFlight)
        ready.removeAll { $0 == handle }
        return pump()
    }

    /// Queues one complete L2CAP frame (basic header included) for `handle`, fragmented to
    /// the buffer length, and returns the packets that can be sent now.
    public mutating func enqueue(_ frame: [UInt8], handle: UInt16, accounted: Bool = false) throws(ACLFlowError) -> [OutgoingACLPacket] {
        guard let (queuedBytes, wasEmpty) = links[handle].map({ ($0.queuedBytes, $0.isEmpty) }) else { throw .unknownHandle(handle) }
        guard frame.count <= 65535 + 4 else { throw .frameTooLong(frame.count) }
        guard queuedBytes + frame.count <= maximumQueuedBytesPerLink else { throw .queueFull(handle) }
        let fragments = Self.fragments(frame, handle: handle, bufferLength: bufferLength)
        links[handle]?.append(fragments, frameBytes: frame.count, accounted: accounted)
        if wasEmpty { ready.append(handle) }
        return pump()
    }

    /// Buffers returned for `handle` (one entry of Number_Of_Completed_Packets).
    public mutating func completed(handle: UInt16, count: Int) -> [OutgoingACLPacket] {
        returnCredits(handle: handle, count: count)
        return pump()
    }

    /// HCI_Number_Of_Completed_Packets (Core Vol 4 Part E §7.7.19).
    public mutating func handle(_ event: HCINumberOfCompletedPackets) -> [OutgoingACLPacket] {
        for entry in event {
            returnCredits(handle: entry.connectionHandle, count: Int(entry.numCompletedPackets))
        }
        return pump()
    }

    private mutating func returnCredits(handle: UInt16, count: Int) {
        guard let inFlight = links[handle]?.inFlight else {
            unknownHandleCompletions += 1
            return
        }
        let n = min(count, inFlight)
        if n < count { excessCompletions += count - n }
        links[handle]?.inFlight -= n
        freeBuffers = min(bufferCount, freeBuffers + n)
    }

    private mutating func pump() -> [OutgoingACLPacket] {
        var out: [OutgoingACLPacket] = []
        while freeBuffers > 0, !ready.isEmpty {
            let handle = ready.removeFirst()
            guard let (q, more) = links[handle]?.takeHead() else { continue }
            if more { ready.append(handle) }
            freeBuffers -= 1
            packetsSent += 1
            out.append(OutgoingACLPacket(handle: handle, packet: q.packet, accountedBytes: q.accountedBytes))
        }
        return out
    }

    /// Splits an L2CAP frame into H4 ACL packets of at most `bufferLength` data bytes:
    /// PB 0b00 first, 0b01 after. Returns each packet with its data byte count.
    public static func fragments(_ frame: [UInt8], handle: UInt16, bufferLength: Int) -> [([UInt8], Int)] {
        precondition(bufferLength > 0, "ACL buffer length must be positive")
        precondition(handle <= hciMaximumConnectionHandle, "connection handle above 0x0EFF")
        var out: [([UInt8], Int)] = []
        var offset = 0
        repeat {
            let n = min(bufferLength, frame.count - offset)
            let pb: UInt16 = offset == 0 ? 0b00 : 0b01
            let hf = handle | pb << 12
            var packet = [UInt8]()
            packet.reserveCapacity(5 + n)
            packet.append(H4PacketType.acl.rawValue)
            packet.append(UInt8(truncatingIfNeeded: hf))
            packet.append(UInt8(truncatingIfNeeded: hf >> 8))
            packet.append(UInt8(truncatingIfNeeded: n))
            packet.append(UInt8(truncatingIfNeeded: n >> 8))
            packet.append(contentsOf: frame[offset ..< offset + n])
            out.append((packet, n))
            offset += n
        } while offset < frame.count
        return out
    }
}
