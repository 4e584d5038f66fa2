import BluetoothWire

/// `replay --packets` for HCI_LE_Advertising_Report events (nearly every packet of a
/// scanning capture), written straight: the text between the values (field names, their
/// indentation, JSON punctuation) is copied as literals, where the ``FieldWriter`` works
/// it out field by field from its frames. The bytes are the writer's, in both formats
/// (the tests and the `capture_replay` fuzz target compare the two paths). Written
/// directly: flags, names in valid UTF-8, 16-bit service UUID lists, TX power, and
/// manufacturer data that is not an iBeacon frame; every other AD value (solicitation
/// lists, service data, invalid UTF-8 names, …) and malformed ones go through the writer,
/// entered at the structure's depth. Holds the names of the companies met (the lookup is
/// a binary search over thousands; a capture repeats a few).
struct AdvertisingReportPacket {
    private var names = NameCache()

    /// The whole record: header ("TIME < TITLE" or the JSON keys), then the event.
    mutating func write(_ e: LEAdvertisingReportEvent, received: Bool, now: UInt64, into w: inout FieldWriter) {
        if w.format == .json {
            w.out.raw("{\"type\":\"h4\",\"name\":\"HCI_LE_Advertising_Report\",\"time\":")
            w.out.seconds(nanoseconds: now)
            w.out.raw(received ? ",\"direction\":\"received\"" : ",\"direction\":\"sent\"")
            w.out.raw(",\"subevent_code\":{\"value\":2,\"name\":\"HCI_LE_Advertising_Report\"},\"num_reports\":")
            w.out.decimal(UInt64(e.numReports))
            w.out.raw(",\"reports\":[")
            var it = e.makeIterator()
            var index = 0
            while let report = try? it.next() {
                if index > 0 { w.out.byte(UInt8(ascii: ",")) }
                json(report, into: &w)
                index &+= 1
            }
            w.out.raw("]}\n")
        } else {
            CaptureReplay.seconds(now, into: &w.out)
            w.out.raw(received ? " < HCI_LE_Advertising_Report" : " > HCI_LE_Advertising_Report")
            w.out.raw("\n  subevent_code: HCI_LE_Advertising_Report (0x02)\n  num_reports: ")
            w.out.decimal(UInt64(e.numReports))
            // Parsing validated every report: the count is Num_Reports.
            w.out.raw("\n  reports: [")
            w.out.decimal(UInt64(e.numReports))
            w.out.byte(UInt8(ascii: "]"))
            var it = e.makeIterator()
            var index: UInt64 = 0
            while let report = try? it.next() {
                w.out.raw("\n    [")
                w.out.decimal(index)
                w.out.byte(UInt8(ascii: "]"))
                text(report, into: &w)
                index &+= 1
            }
            w.out.byte(UInt8(ascii: "\n"))
        }
    }

    /// Event_Type's name as literal text.
    static func eventTypeName(_ t: LEAdvertisingReportEventType) -> StaticString {
        switch t.rawValue {
        case 0: "ADV_IND"
        case 1: "ADV_DIRECT_IND"
        case 2: "ADV_SCAN_IND"
        case 3: "ADV_NONCONN_IND"
        case 4: "SCAN_RSP"
        default: "Reserved"
        }
    }

    // MARK: text

    private mutating func text(_ r: LEAdvertisingReport, into w: inout FieldWriter) {
        w.out.raw("\n      event_type: ")
        w.out.raw(Self.eventTypeName(r.eventType))
        w.out.parenthesizedHex(UInt64(r.eventType.rawValue))
        w.out.raw("\n      address_type: ")
        if let name = r.address.type.nameLiteral { w.out.raw(name) } else { w.out.utf8(r.address.type.description) }
        w.out.parenthesizedHex(UInt64(r.address.type.rawValue))
        w.out.raw("\n      address: \"")
        w.out.address(r.address.address)
        w.out.raw("\"\n      data_length: ")
        w.out.decimal(UInt64(r.data.count))
        w.out.raw("\n      data: ")
        Self.textBytes(r.data, &w.out)
        w.out.raw("\n      advertising_data:\n        ad_structures: [")
        let (count, failure) = Self.structures(r.data)
        w.out.decimal(UInt64(count))
        w.out.byte(UInt8(ascii: "]"))
        var it = AdvertisingData(r.data).makeIterator()
        for j in 0 ..< count {
            guard let s = try? it.next() else { break }
            w.out.raw("\n          [")
            w.out.decimal(UInt64(j))
            w.out.raw("]\n            length: ")
            w.out.decimal(UInt64(s.data.count &+ 1))
            w.out.raw("\n            type: ")
            if let name = s.type.nameLiteral { w.out.raw(name) } else { w.out.raw("unknown") }
            w.out.parenthesizedHex(UInt64(s.type.rawValue))
            textValue(s, into: &w)
        }
        if let failure {
            w.out.raw("\n        error: \"")
            w.out.utf8(failure.description)
            w.out.byte(UInt8(ascii: "\""))
        }
        w.out.raw("\n      rssi: ")
        if r.rssi == 127 { w.out.raw("not available (0x7F)") } else { w.out.decimal(Int64(r.rssi)) }
    }

    private static func textBytes(_ b: UnsafeRawBufferPointer, _ out: inout OutputBuffer) {
        if b.isEmpty { out.raw("(empty)"); return }
        out.hexLower(b, separator: UInt8(ascii: " "))
        out.raw(" (")
        out.decimal(UInt64(b.count))
        out.raw(" bytes)")
    }

    /// The structure's `value` (text, fields at indent level 6).
    private mutating func textValue(_ s: ADStructure, into w: inout FieldWriter) {
        switch try? s.value() {
        case .flags(let f):
            w.out.raw("\n            value: ")
            w.out.utf8(ADFlags.description(ofRawValue: f.rawValue))
            w.out.parenthesizedHex(UInt64(f.rawValue))
        case .localName(let n) where OutputBuffer.isValidUTF8(n.bytes):
            w.out.raw("\n            value: \"")
            w.out.append(n.bytes)
            w.out.byte(UInt8(ascii: "\""))
        case .txPowerLevel(let dBm):
            w.out.raw("\n            value: ")
            w.out.decimal(Int64(dBm))
        case .serviceUUIDs(let list) where list.width == 2:
            w.out.raw("\n            value: [")
            w.out.decimal(UInt64(list.count))
            w.out.byte(UInt8(ascii: "]"))
            var k: UInt64 = 0
            for u in list {
                w.out.raw("\n              [")
                w.out.decimal(k)
                w.out.raw("] \"")
                w.out.uuid(u)
                w.out.byte(UInt8(ascii: "\""))
                k &+= 1
            }
        case .manufacturerData(let m) where m.iBeacon == nil:
            w.out.raw("\n            value:\n              company_id: ")
            companyName(m.companyID, &w.out)
            w.out.parenthesizedHex(UInt64(m.companyID))
            w.out.raw("\n              data: ")
            Self.textBytes(m.payload, &w.out)
        default:
            // Through the writer: the structure's object, `length` and `type` written.
            w.enterObject(indent: 6, fields: 2)
            Self.describeValue(s, into: &w)
            w.leaveObject()
        }
    }

    // MARK: JSON

    private mutating func json(_ r: LEAdvertisingReport, into w: inout FieldWriter) {
        w.out.raw("{\"event_type\":{\"value\":")
        w.out.decimal(UInt64(r.eventType.rawValue))
        w.out.raw(",\"name\":")
        w.out.jsonLiteral(Self.eventTypeName(r.eventType))
        w.out.raw("},\"address_type\":{\"value\":")
        w.out.decimal(UInt64(r.address.type.rawValue))
        w.out.raw(",\"name\":")
        if let name = r.address.type.nameLiteral { w.out.jsonLiteral(name) } else { w.out.jsonString(r.address.type.description) }
        w.out.raw("},\"address\":\"")
        w.out.address(r.address.address)
        w.out.raw("\",\"data_length\":")
        w.out.decimal(UInt64(r.data.count))
        w.out.raw(",\"data\":\"")
        w.out.hexLower(r.data)
        w.out.raw("\",\"advertising_data\":{\"ad_structures\":[")
        let (count, failure) = Self.structures(r.data)
        var it = AdvertisingData(r.data).makeIterator()
        for j in 0 ..< count {
            guard let s = try? it.next() else { break }
            w.out.raw(j == 0 ? "{\"length\":" : ",{\"length\":")
            w.out.decimal(UInt64(s.data.count &+ 1))
            w.out.raw(",\"type\":{\"value\":")
            w.out.decimal(UInt64(s.type.rawValue))
            w.out.raw(",\"name\":")
            if let name = s.type.nameLiteral { w.out.jsonLiteral(name) } else { w.out.raw("\"unknown\"") }
            w.out.byte(UInt8(ascii: "}"))
            jsonValue(s, into: &w)
            w.out.byte(UInt8(ascii: "}"))
        }
        w.out.byte(UInt8(ascii: "]"))
        if let failure {
            w.out.raw(",\"error\":")
            w.out.jsonString(failure.description)
        }
        w.out.raw("},\"rssi\":")
        if r.rssi == 127 { w.out.raw("{\"value\":127,\"name\":\"not available\"}") } else { w.out.decimal(Int64(r.rssi)) }
        w.out.byte(UInt8(ascii: "}"))
    }

    /// The structure's `,"value":…` (or, malformed, `error` and `data`).
    private mutating func jsonValue(_ s: ADStructure, into w: inout FieldWriter) {
        switch try? s.value() {
        case .flags(let f):
            w.out.raw(",\"value\":{\"value\":")
            w.out.decimal(UInt64(f.rawValue))
            w.out.raw(",\"name\":")
            w.out.jsonString(ADFlags.description(ofRawValue: f.rawValue))
            w.out.byte(UInt8(ascii: "}"))
        case .localName(let n) where OutputBuffer.isValidUTF8(n.bytes):
            w.out.raw(",\"value\":")
            w.out.jsonString(n.bytes)
        case .txPowerLevel(let dBm):
            w.out.raw(",\"value\":")
            w.out.decimal(Int64(dBm))
        case .serviceUUIDs(let list) where list.width == 2:
            w.out.raw(",\"value\":[")
            var first = true
            for u in list {
                w.out.raw(first ? "\"" : ",\"")
                w.out.uuid(u)
                w.out.byte(UInt8(ascii: "\""))
                first = false
            }
            w.out.byte(UInt8(ascii: "]"))
        case .manufacturerData(let m) where m.iBeacon == nil:
            w.out.raw(",\"value\":{\"company_id\":{\"value\":")
            w.out.decimal(UInt64(m.companyID))
            w.out.raw(",\"name\":")
            if !names.writeJSON(.company, m.companyID, into: &w.out) { w.out.jsonLiteral("unknown") }
            w.out.raw("},\"data\":\"")
            w.out.hexLower(m.payload)
            w.out.raw("\"}")
        default:
            w.enterObject(indent: 0, fields: 2)
            Self.describeValue(s, into: &w)
            w.leaveObject()
        }
    }

    // MARK: shared

    /// The structures before the end or a layout error, and the error (as
    /// ``AdvertisingData``'s description lists them).
    private static func structures(_ data: UnsafeRawBufferPointer) -> (Int, WireError?) {
        var it = AdvertisingData(data).makeIterator()
        var count = 0
        do throws(WireError) {
            while try it.next() != nil { count &+= 1 }
        } catch {
            return (count, error)
        }
        return (count, nil)
    }

    /// `value` (or `error` and `data`) through the writer, as ``ADStructure``'s description.
    private static func describeValue(_ s: ADStructure, into w: inout FieldWriter) {
        do throws(WireError) {
            try s.value().describe("value", into: &w)
        } catch {
            w.text("error", error.description)
            w.bytes("data", s.data)
        }
    }

    /// The company's name as the description writes it (text).
    private mutating func companyName(_ id: UInt16, _ out: inout OutputBuffer) {
        if let company = names.name(.company, id) { out.append(UnsafeRawBufferPointer(company.utf8)) } else { out.raw("unknown") }
    }
}
