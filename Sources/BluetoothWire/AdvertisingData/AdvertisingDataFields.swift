// Advertising data described field by field (`hcigatt decode ad`, scan JSON, replay).
// Written straight to the sink: no allocation for the usual structures.

extension AdvertisingData: FieldDescribable {
    public var fieldTitle: String { "Advertising Data" }

    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// ``describe(into:)`` specialized for the text and JSON writer (generic code called
    /// from another module runs unspecialized).
    public func describe(into w: inout FieldWriter) { describeAny(into: &w) }

    /// `ad_structures`: see ``describeAny(into:)``.
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) { describeAny(into: &s) }

    /// `ad_structures`: one object per structure with its type name and decoded value.
    /// A layout error ends the list and is reported as `error`; a malformed value is shown
    /// with its error and raw bytes, and the following structures are still listed.
    func describeAny<S: FieldSink & ~Copyable>(into s: inout S) {
        var count = 0
        var it = makeIterator()
        var failure: WireError?
        while true {
            do throws(WireError) {
                guard try it.next() != nil else { break }
                count += 1
            } catch {
                failure = error
                break
            }
        }
        s.beginList("ad_structures", count: count)
        it = makeIterator()
        for _ in 0 ..< count {
            guard let structure = try? it.next() else { break }
            s.beginObject("")
            structure.describe(into: &s)
            s.end()
        }
        s.end()
        if let failure { s.text("error", failure.description) }
    }
}

extension ADStructure {
    /// `length`, `type` (named) and `value` (decoded, or `error` + `data` when malformed).
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// ``describe(into:)`` specialized for the text and JSON writer.
    public func describe(into w: inout FieldWriter) { describeAny(into: &w) }

    /// Writes `length`, `type` and `value` (or `error` and `data`).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) { describeAny(into: &s) }

    func describeAny<S: FieldSink & ~Copyable>(into s: inout S) {
        s.uint("length", UInt64(data.count + 1))
        if let name = type.nameLiteral { s.named("type", UInt64(type.rawValue), literal: name) } else {
            s.named("type", UInt64(type.rawValue), literal: "unknown")
        }
        do throws(WireError) {
            try value().describe("value", into: &s)
        } catch {
            s.text("error", error.description)
            s.bytes("data", data)
        }
    }
}

extension ADFlags {
    /// ``description`` of every value, made once: flags are in nearly every advertisement.
    static let descriptions: [String] = (0 ... 255).map { ADFlags(rawValue: UInt8($0)).description }

    /// ``description`` of the flags byte `raw`, made once per value (no String built per call).
    public static func description(ofRawValue raw: UInt8) -> String { descriptions[Int(raw)] }
}

extension ADValue {
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue { FieldTree.value { describe("value", into: &$0) } }

    /// Writes the value as the field `name`.
    public func describe<S: FieldSink & ~Copyable>(_ name: FieldName, into s: inout S) {
        switch self {
        case .flags(let f):
            s.named(name, UInt64(f.rawValue), ADFlags.descriptions[Int(f.rawValue)])
        case .serviceUUIDs(let list), .serviceSolicitation(let list):
            s.beginList(name, count: list.count)
            for u in list { s.uuid("", u) }
            s.end()
        case .localName(let n):
            s.text(name, utf8: n.bytes)
        case .txPowerLevel(let dBm):
            s.int(name, Int64(dBm))
        case .peripheralConnectionIntervalRange(let r):
            func bound(_ field: FieldName, _ v: UInt16) {
                if v == 0xFFFF { s.named(field, 0xFFFF, literal: "no specific value") } else { s.uint(field, UInt64(v)) }
            }
            s.beginObject(name)
            bound("interval_min", r.rawMinimum)
            bound("interval_max", r.rawMaximum)
            s.end()
        case .serviceData(let d):
            s.beginObject(name)
            s.uuid("uuid", d.uuid)
            s.bytes("data", d.payload)
            do throws(WireError) {
                if let frame = try d.eddystone() { frame.describe("eddystone", into: &s) }
            } catch {
                s.text("eddystone_error", error.description)
            }
            s.end()
        case .appearance(let a):
            s.named(name, UInt64(a.rawValue), a.description)
        case .targetAddresses(let list):
            s.beginList(name, count: list.count)
            for a in list { s.text("", a.description) }
            s.end()
        case .advertisingInterval(let units):
            s.beginObject(name)
            s.uint("interval", UInt64(units))
            s.double("milliseconds", Double(units) * 0.625)
            s.end()
        case .leDeviceAddress(let a):
            s.text(name, a.description)
        case .leRole(let r):
            s.named(name, UInt64(r.rawValue), r.description)
        case .uri(let u):
            s.text(name, u.string)
        case .manufacturerData(let m):
            s.beginObject(name)
            if let company = AssignedNumbers.companyLabel(m.companyID) {
                s.named("company_id", UInt64(m.companyID), company)
            } else {
                s.named("company_id", UInt64(m.companyID), literal: "unknown")
            }
            s.bytes("data", m.payload)
            if let b = m.iBeacon { b.describe("ibeacon", into: &s) }
            s.end()
        case .other(_, let bytes):
            s.bytes(name, bytes)
        }
    }
}

extension IBeacon {
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue { FieldTree.value { describe("ibeacon", into: &$0) } }

    /// Writes the frame as the object `name`.
    public func describe<S: FieldSink & ~Copyable>(_ name: FieldName, into s: inout S) {
        s.beginObject(name)
        s.text("proximity_uuid", proximityUUID.uuidString)
        s.uint("major", UInt64(major))
        s.uint("minor", UInt64(minor))
        s.int("measured_power", Int64(measuredPower))
        s.end()
    }
}

extension EddystoneFrame {
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue { FieldTree.value { describe("eddystone", into: &$0) } }

    /// Writes the frame as the object `name`.
    public func describe<S: FieldSink & ~Copyable>(_ name: FieldName, into s: inout S) {
        s.beginObject(name)
        switch self {
        case .uid(let u):
            s.text("frame", literal: "UID")
            s.int("tx_power", Int64(u.txPower))
            s.bytes("namespace", u.namespaceID)
            s.bytes("instance", u.instanceID)
        case .url(let u):
            s.text("frame", literal: "URL")
            s.int("tx_power", Int64(u.txPower))
            s.text("url", u.string)
        case .tlm(let t):
            s.text("frame", literal: "TLM")
            s.uint("battery_voltage_mv", UInt64(t.batteryVoltage))
            if let c = t.temperature { s.double("temperature_c", c) } else { s.text("temperature_c", literal: "not supported") }
            s.uint("advertising_pdu_count", UInt64(t.advertisingPDUCount))
            s.double("time_since_power_on_s", Double(t.timeSincePowerOn) / 10)
        case .encryptedTLM(let b):
            s.text("frame", literal: "eTLM")
            s.bytes("data", b)
        case .eid(let e):
            s.text("frame", literal: "EID")
            s.int("tx_power", Int64(e.txPower))
            s.text("eid", Hex.pad(e.eid, 16))
        case .unknown(let type, let b):
            s.uint("frame_type", UInt64(type))
            s.bytes("data", b)
        }
        s.end()
    }
}
