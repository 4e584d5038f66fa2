import BluetoothProfiles
import BluetoothWire

/// What `replay --packets` learns of each peer's attribute table from the GATT discovery in
/// the same capture, so that later ATT PDUs are shown with the attribute's type and their
/// values decoded (as Wireshark does; btmon shows handles only). Sans I/O: fed the
/// capture's events and ACL packets in order.
///
/// Learned from: characteristic declarations (Read By Type Response to a Read By Type
/// Request for 0x2803: value handle → characteristic UUID) and Find Information Responses
/// (handle → descriptor UUID). Tables are kept per peer address (from LE (Enhanced)
/// Connection Complete), so a reconnection that skips discovery (a GATT cache) still names
/// its handles; per connection handle, until it disconnects, when the capture began after
/// the connection. ATT PDUs split over several ACL packets are shown as they are, without
/// the annotation.
struct CaptureGATTMap {
    /// Whose attribute table: a peer (its address's key with the top bit set, or a
    /// connection handle whose peer the capture did not see), bit 62 set for the table of
    /// the capture's own host as that peer's server (each side of a link serves its own).
    private typealias Table = UInt64

    private struct Request {
        var opcode: UInt8
        var type: UInt16?
        var handle: UInt16?
    }

    private var peers: [UInt16: LEAddress] = [:]
    private var tables: [Table: [UInt16: BluetoothUUID]] = [:]
    /// The outstanding request per connection and direction (sent by the host or not).
    private var requests: [UInt32: Request] = [:]
    /// ATT_MTU per connection, from Exchange MTU (23 until then).
    private var mtus: [UInt16: Int] = [:]
    /// Attributes remembered in all: a hostile or huge capture stays bounded (at the cap,
    /// everything learned is forgotten and learning starts over).
    private var attributeCount = 0
    private static let maximumAttributes = 1 << 16

    /// The table of the side that serves `connection`'s attributes: the peer's, or ours.
    private func table(_ connection: UInt16, peerServes: Bool) -> Table {
        let peer: UInt64 = peers[connection].map { $0.key | 1 << 63 } ?? UInt64(connection)
        return peerServes ? peer : peer | 1 << 62
    }

    private static func key(_ connection: UInt16, sentByHost: Bool) -> UInt32 {
        UInt32(connection) << 1 | (sentByHost ? 1 : 0)
    }

    /// An HCI event of the capture: connections coming and going.
    mutating func event(_ event: HCIEvent) {
        switch event {
        case .leMeta(.connectionComplete(let e)) where e.status == .success:
            connected(e.connectionHandle, e.peerAddress)
        case .leMeta(.enhancedConnectionComplete(let e)) where e.status == .success:
            connected(e.connectionHandle, e.peerAddress)
        case .disconnectionComplete(let e) where e.status == .success:
            forget(e.connectionHandle)
        default:
            break
        }
    }

    private mutating func connected(_ handle: UInt16, _ address: LEAddress) {
        forget(handle)  // a disconnection the capture missed
        peers[handle] = address
    }

    /// The link is gone: its requests and MTU; what a link of an unknown peer taught (the
    /// handle may come back for another device).
    private mutating func forget(_ handle: UInt16) {
        if peers.removeValue(forKey: handle) == nil {
            for side in [table(handle, peerServes: true), table(handle, peerServes: false)] {
                if let gone = tables.removeValue(forKey: side) { attributeCount -= gone.count }
            }
        }
        requests[Self.key(handle, sentByHost: true)] = nil
        requests[Self.key(handle, sentByHost: false)] = nil
        mtus[handle] = nil
    }

    /// The ATT PDU of one ACL packet (H4 indicator included), when the packet carries a
    /// whole one on the ATT channel: (connection handle, PDU).
    static func attPDU(_ packet: UnsafeRawBufferPointer) -> (connection: UInt16, pdu: UnsafeRawBufferPointer)? {
        guard packet.count >= 10, packet[0] == H4PacketType.acl.rawValue else { return nil }
        let handleAndFlags = UInt16(packet[1]) | UInt16(packet[2]) << 8
        let boundary = (handleAndFlags >> 12) & 0x3
        guard boundary == 0b00 || boundary == 0b10 else { return nil }  // a first fragment
        let dataLength = Int(packet[3]) | Int(packet[4]) << 8
        let l2capLength = Int(packet[5]) | Int(packet[6]) << 8
        let channel = UInt16(packet[7]) | UInt16(packet[8]) << 8
        guard channel == 0x0004, dataLength == packet.count - 5, l2capLength == dataLength - 4, l2capLength >= 1 else { return nil }
        return (handleAndFlags & 0x0FFF, UnsafeRawBufferPointer(rebasing: packet[9...]))
    }

    /// Learns from an ATT PDU and returns the fields to add to its description: the
    /// attribute's type and name, and its value decoded where hcigatt knows the
    /// characteristic.
    mutating func att(connection: UInt16, sentByHost: Bool, pdu: UnsafeRawBufferPointer) -> [Field] {
        let opcode = pdu[0]
        let body = UnsafeRawBufferPointer(rebasing: pdu[1...])
        let mine = Self.key(connection, sentByHost: sentByHost)
        let theirs = Self.key(connection, sentByHost: !sentByHost)
        // Client to server: requests, commands and confirmations (even opcodes); server to
        // client: responses, notifications, indications (odd). A PDU the host sent to the
        // server is about the peer's table; one it sent as the server, about its own.
        let clientToServer = opcode & 0x01 == 0
        let server = table(connection, peerServes: clientToServer == sentByHost)
        func u16(_ at: Int) -> UInt16? {
            guard at + 2 <= body.count else { return nil }
            return UInt16(body[at]) | UInt16(body[at + 1]) << 8
        }
        // The request a response answers: the last one the other side sent, of its opcode.
        func answered() -> Request? {
            guard let r = requests.removeValue(forKey: theirs), r.opcode &+ 1 == opcode else { return nil }
            return r
        }
        switch opcode {
        case 0x02:  // Exchange MTU Request: the client's receive MTU
            requests[mine] = Request(opcode: opcode, handle: u16(0))
        case 0x03:  // Exchange MTU Response: ATT_MTU is the smaller of the two
            if let client = answered()?.handle, let mtu = u16(0) { mtus[connection] = max(23, Int(min(client, mtu))) }
        case 0x08:  // Read By Type Request: start, end, type (a 16-bit type is what matters here)
            requests[mine] = Request(opcode: opcode, type: body.count == 6 ? u16(4) : nil)
        case 0x09:  // Read By Type Response
            if answered()?.type == 0x2803 { learnDeclarations(body, server) }
        case 0x05:  // Find Information Response
            if answered() != nil { learnInformation(body, server) }
        case 0x0A, 0x0C:  // Read Request, Read Blob Request
            guard let h = u16(0) else { return [] }
            requests[mine] = Request(opcode: opcode, handle: h)
            return describe(h, value: nil, server)
        case 0x0B, 0x0D:  // Read Response, Read Blob Response
            guard let h = answered()?.handle else { return [] }
            // A blob, or a response that fills ATT_MTU (a long value's first part), is
            // named, not decoded.
            let whole = opcode == 0x0B && body.count < (mtus[connection] ?? 23) - 1
            return describe(h, value: whole ? body : nil, server)
        case 0x12, 0x52, 0x1B, 0x1D:  // Write Request, Write Command, Notification, Indication
            guard let h = u16(0) else { return [] }
            if opcode == 0x12 { requests[mine] = Request(opcode: opcode) }
            return describe(h, value: UnsafeRawBufferPointer(rebasing: body[2...]), server)
        default:
            // Any other request replaces the outstanding one; any response ends it.
            if opcode & 0x01 == 0 && opcode & 0x40 == 0 && opcode != 0x1E {
                requests[mine] = Request(opcode: opcode)
            } else if opcode & 0x01 == 1 && opcode != 0x1B && opcode != 0x1D && opcode != 0x23 {
                requests[theirs] = nil
            }
        }
        return []
    }

    private mutating func remember(_ handle: UInt16, _ uuid: BluetoothUUID, _ table: Table) {
        if tables[table]?[handle] == nil {
            if attributeCount >= Self.maximumAttributes {
                tables.removeAll()
                attributeCount = 0
            }
            attributeCount += 1
        }
        tables[table, default: [:]][handle] = uuid
    }

    /// Characteristic declarations: handle, properties, value handle, UUID (16 or 128 bits).
    private mutating func learnDeclarations(_ body: UnsafeRawBufferPointer, _ table: Table) {
        guard let length = body.first.map(Int.init), length == 7 || length == 21 else { return }
        var at = 1
        while at + length <= body.count {
            let valueHandle = UInt16(body[at + 3]) | UInt16(body[at + 4]) << 8
            let uuid = UnsafeRawBufferPointer(rebasing: body[(at + 5) ..< (at + length)])
            if let u = try? BluetoothUUID(wire: uuid) { remember(valueHandle, u, table) }
            at += length
        }
    }

    /// Find Information Response: format 1 (16-bit UUIDs) or 2 (128-bit), handle + UUID each.
    private mutating func learnInformation(_ body: UnsafeRawBufferPointer, _ table: Table) {
        guard let format = body.first, format == 1 || format == 2 else { return }
        let length = format == 1 ? 4 : 18
        var at = 1
        while at + length <= body.count {
            let handle = UInt16(body[at]) | UInt16(body[at + 1]) << 8
            // Declarations are known from their own discovery; descriptors are what is new.
            if let u = try? BluetoothUUID(wire: UnsafeRawBufferPointer(rebasing: body[(at + 2) ..< (at + length)])),
               u.uuid16.map({ $0 < 0x2800 || $0 > 0x2803 }) ?? true {
                remember(handle, u, table)
            }
            at += length
        }
    }

    /// `attribute_type` (and its name), and `decoded` (or `decode_error`) for a value.
    private func describe(_ handle: UInt16, value: UnsafeRawBufferPointer?, _ table: Table) -> [Field] {
        guard let uuid = tables[table]?[handle] else { return [] }
        var fields = [Field("attribute_type", .text(uuid.description))]
        if let name = AssignedNumbers.uuidName(uuid) { fields.append(Field("attribute_type_name", .text(name))) }
        guard let value else { return fields }
        do throws(WireError) {
            if let decoded = try CharacteristicDecoder.decode(uuid: uuid, value: value) {
                fields.append(Field("decoded", .object([Field("summary", .text(decoded.summary))] + decoded.fields)))
            }
        } catch {
            fields.append(Field("decode_error", .text(error.description)))
        }
        return fields
    }
}
