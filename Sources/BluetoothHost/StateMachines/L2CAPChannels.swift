import BluetoothWire

/// The layer a fixed L2CAP channel's frames go to.
public enum L2CAPChannelConsumer: Sendable, Hashable {
    /// The Attribute Protocol (CID 0x0004).
    case att
    /// LE signaling (CID 0x0005): connection parameters, credit-based channels.
    case leSignaling
    /// The Security Manager (CID 0x0006).
    case smp
    /// An LE credit-based channel: the dynamic CIDs 0x0040–0x007F (``L2CAPCreditChannels``
    /// knows which are open on which link).
    case creditBased(cid: UInt16)
}

/// The L2CAP layer of LE-U logical links, sans-I/O (Core Vol 3 Part A §2.1, §3.1): ACL
/// fragments are reassembled into basic frames and each frame goes to the layer that
/// registered its channel ID; what the layers above send is framed here. Fixed channels
/// are registered by the layers above (the host registers ATT, signaling and SMP); a frame
/// for a channel nobody registered is dropped and counted, never delivered by guess.
public struct L2CAPChannels: Sendable {
    private var reassembler: L2CAPReassembler
    /// Few entries: a linear scan beats hashing on the per-frame path.
    private var routes: [(cid: L2CAPChannelID, consumer: L2CAPChannelConsumer)] = []
    /// Frames for channels nobody registered.
    public private(set) var unroutedFrames = 0

    /// A router over `reassembler` with no channel registered.
    public init(reassembler: L2CAPReassembler = L2CAPReassembler()) {
        self.reassembler = reassembler
    }

    /// Sends the frames of `cid` to `consumer` (replacing an earlier registration).
    public mutating func register(_ cid: L2CAPChannelID, to consumer: L2CAPChannelConsumer) {
        routes.removeAll { $0.cid == cid }
        routes.append((cid, consumer))
    }

    /// Stops routing `cid` (its frames count as unrouted, except dynamic channels 0x0040-0x007F,
    /// which go to the credit-based channel machine).
    public mutating func unregister(_ cid: L2CAPChannelID) {
        routes.removeAll { $0.cid == cid }
    }

    /// Who gets the frames of `cid` (nil: nobody).
    public func consumer(of cid: L2CAPChannelID) -> L2CAPChannelConsumer? {
        for r in routes where r.cid == cid { return r.consumer }
        return nil
    }

    /// A link came up or went down: nothing half-reassembled carries over.
    public mutating func resetLink(_ handle: UInt16) {
        reassembler.removeLink(handle)
    }

    /// One ACL fragment from the controller. `deliver` gets each complete frame of a
    /// registered channel (handle, consumer, payload view valid during the call) and must
    /// not call back into this layer. Returns reassembly failures (reported, not fatal).
    public mutating func receive(handle: UInt16, boundary: ACLPacketBoundaryFlag, fragment: UnsafeRawBufferPointer,
                                 deliver: (UInt16, L2CAPChannelConsumer, UnsafeRawBufferPointer) -> Void) -> [L2CAPReassemblyError] {
        let routes = self.routes
        var unrouted = 0
        let failures = reassembler.append(handle: handle, boundary: boundary, fragment: fragment) { h, cid, payload in
            for r in routes where r.cid == cid {
                deliver(h, r.consumer, payload)
                return
            }
            if (0x0040 ... 0x007F).contains(cid.rawValue) {
                deliver(h, .creditBased(cid: cid.rawValue), payload)
                return
            }
            unrouted += 1
        }
        unroutedFrames += unrouted
        return failures
    }

    /// A basic frame (Length, Channel ID, payload) for `cid`. Core Vol 3 Part A §3.1.
    public static func frame(_ cid: L2CAPChannelID, _ payload: [UInt8]) throws(HostError) -> [UInt8] {
        do throws(WireError) {
            return try L2CAPFrame(channelID: cid, bytes: payload).encoded()
        } catch {
            throw HostError(.invalidParameters, "cannot frame \(payload.count) bytes for L2CAP channel \(cid): \(error)")
        }
    }
}
