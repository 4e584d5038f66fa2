/// Describes a whole packet layer by layer for display: H4 → HCI command / event / ACL →
/// L2CAP → ATT, LE signaling or SMP. Used by `hcigatt decode` and `hcigatt replay`.
///
/// Not the hot path (it builds field lists). An ACL fragment that does not hold a whole
/// L2CAP frame is shown as raw bytes: reassembly across packets is the host's business.
public enum Dissector {
    /// A description; `error` is set when a layer below the top one is malformed
    /// (the layers that parsed are still in `fields`).
    public struct Dissection: Sendable {
        /// What the layer is ("HCI_LE_Advertising_Report", "ATT_READ_RSP"...).
        public var title: String
        /// The decoded fields, for the text and JSON renderers.
        public var fields: [Field]
        /// Why the layer stopped decoding, if it did.
        public var error: WireError?
    }

    /// An H4 packet: indicator byte followed by the HCI packet.
    public static func h4(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Dissection {
        let frame = try H4Frame.parse(bytes)
        return try hci(type: frame.type, packet: frame.packet, baseOffset: 1)
    }

    /// An HCI packet of the given type, without the indicator.
    public static func hci(type: H4PacketType, packet: UnsafeRawBufferPointer, baseOffset: Int = 0) throws(WireError) -> Dissection {
        do throws(WireError) {
            switch type {
            case .command:
                let c = try HCICommand(parsing: packet)
                return Dissection(title: c.fieldTitle, fields: c.fields)
            case .event:
                let e = try HCIEvent(parsing: packet)
                return Dissection(title: e.fieldTitle, fields: e.fields)
            case .acl:
                return try acl(packet)
            case .sco:
                let p = try SCOPacket(parsing: packet)
                return Dissection(title: p.fieldTitle, fields: p.fields)
            case .iso:
                let p = try ISOPacket(parsing: packet)
                return Dissection(title: p.fieldTitle, fields: p.fields)
            default:
                throw WireError(.unknownPacketType, at: 0, "unknown H4 packet type")
            }
        } catch {
            throw WireError(error.code, at: error.offset &+ baseOffset, error.reason)
        }
    }

    /// An ACL data packet; a start fragment carrying a whole L2CAP frame is decoded further.
    public static func acl(_ packet: UnsafeRawBufferPointer) throws(WireError) -> Dissection {
        let p = try ACLPacket(parsing: packet)
        var fields = p.fields
        var error: WireError?
        if p.header.packetBoundary.isFirst, p.payload.count >= L2CAPBasicFrame.headerLength {
            var r = ByteReader(p.payload)
            let length = Int(try r.u16())
            if length == p.payload.count - L2CAPBasicFrame.headerLength {
                let frame = try L2CAPBasicFrame(parsing: p.payload)
                let inner = l2cap(frame, baseOffset: ACLHeader.length)
                fields.removeAll { $0.name == "data" }
                fields.append(Field("l2cap", .object(inner.fields)))
                error = inner.error
            } else {
                fields.append(Field("l2cap", .text("fragment of a \(length)-byte L2CAP frame (reassembly needed)")))
            }
        }
        return Dissection(title: p.fieldTitle, fields: fields, error: error)
    }

    /// An L2CAP basic frame; ATT, LE signaling and SMP payloads are decoded.
    public static func l2cap(_ frame: L2CAPBasicFrame, baseOffset: Int = 0) -> Dissection {
        var fields = frame.fields
        var error: WireError?
        let payloadOffset = baseOffset &+ L2CAPBasicFrame.headerLength
        func nest(_ name: String, _ body: () throws(WireError) -> (String, [Field])) {
            do throws(WireError) {
                let (title, inner) = try body()
                fields.removeAll { $0.name == "payload" || $0.name == "information_payload" }
                fields.append(Field(name, .object([Field("pdu", .text(title))] + inner)))
            } catch let e {
                error = WireError(e.code, at: e.offset &+ payloadOffset, e.reason)
                fields.append(Field("error", .text(error?.description ?? "")))
            }
        }
        switch frame.channelID {
        case .att:
            nest("att") { () throws(WireError) in let a = try ATTPDU(parsing: frame.payload); return (a.fieldTitle, a.fields) }
        case .leSignaling:
            nest("signaling") { () throws(WireError) in
                let s = try L2CAPSignalingCommand(parsing: frame.payload)
                return (s.fieldTitle, s.fields)
            }
        case .smp:
            nest("smp") { () throws(WireError) in let s = try SMPPDU(parsing: frame.payload); return (s.fieldTitle, s.fields) }
        default:
            break
        }
        return Dissection(title: "L2CAP", fields: fields, error: error)
    }
}
