// Display of advertising data as fields (`hcigatt decode`). Not the hot path.

extension AdvertisingData: FieldDescribable {
    public var fieldTitle: String { "Advertising Data" }

    /// `ad_structures`: one object per structure with its type name and decoded value.
    /// A layout error ends the list and is reported as `error`; a malformed value is shown
    /// with its error and raw bytes, and the following structures are still listed.
    public var fields: [Field] {
        var list: [FieldValue] = []
        var it = makeIterator()
        var failure: WireError?
        while true {
            let next: ADStructure?
            do throws(WireError) { next = try it.next() } catch {
                failure = error
                break
            }
            guard let s = next else { break }
            list.append(.object(s.fields))
        }
        var out = [Field("ad_structures", .list(list))]
        if let failure { out.append(Field("error", .text(failure.description))) }
        return out
    }
}

extension ADStructure {
    /// `length`, `type` (named) and `value` (decoded, or `error` + `data` when malformed).
    public var fields: [Field] {
        var out = [
            Field("length", .uint(UInt64(data.count + 1))),
            Field("type", .named(UInt64(type.rawValue), type.name ?? "unknown")),
        ]
        do throws(WireError) {
            out.append(Field("value", try value().fieldValue))
        } catch {
            out.append(Field("error", .text(error.description)))
            out.append(Field("data", .bytes(data)))
        }
        return out
    }
}

extension ADValue {
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue {
        switch self {
        case .flags(let f):
            return .named(UInt64(f.rawValue), f.description)
        case .serviceUUIDs(let list), .serviceSolicitation(let list):
            return .list(list.map { .text($0.description) })
        case .localName(let n):
            return .text(n.string)
        case .txPowerLevel(let dBm):
            return .int(Int64(dBm))
        case .peripheralConnectionIntervalRange(let r):
            func bound(_ v: UInt16) -> FieldValue { v == 0xFFFF ? .named(0xFFFF, "no specific value") : .uint(UInt64(v)) }
            return .object([Field("interval_min", bound(r.rawMinimum)), Field("interval_max", bound(r.rawMaximum))])
        case .serviceData(let d):
            var f = [Field("uuid", .text(d.uuid.description)), Field("data", .bytes(d.payload))]
            do throws(WireError) {
                if let frame = try d.eddystone() { f.append(Field("eddystone", frame.fieldValue)) }
            } catch {
                f.append(Field("eddystone_error", .text(error.description)))
            }
            return .object(f)
        case .appearance(let a):
            return .named(UInt64(a.rawValue), a.description)
        case .targetAddresses(let list):
            return .list(list.map { .text($0.description) })
        case .advertisingInterval(let units):
            return .object([Field("interval", .uint(UInt64(units))),
                            Field("milliseconds", .double(Double(units) * 0.625))])
        case .leDeviceAddress(let a):
            return .text(a.description)
        case .leRole(let r):
            return .named(UInt64(r.rawValue), r.description)
        case .uri(let u):
            return .text(u.string)
        case .manufacturerData(let m):
            var f = [Field("company_id", .named(UInt64(m.companyID), m.companyName ?? "unknown")),
                     Field("data", .bytes(m.payload))]
            if let b = m.iBeacon { f.append(Field("ibeacon", b.fieldValue)) }
            return .object(f)
        case .other(_, let bytes):
            return .bytes(bytes)
        }
    }
}

extension IBeacon {
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue {
        .object([
            Field("proximity_uuid", .text(proximityUUID.uuidString)),
            Field("major", .uint(UInt64(major))),
            Field("minor", .uint(UInt64(minor))),
            Field("measured_power", .int(Int64(measuredPower))),
        ])
    }
}

extension EddystoneFrame {
    /// The value as a field, for the text and JSON renderers.
    public var fieldValue: FieldValue {
        switch self {
        case .uid(let u):
            return .object([Field("frame", .text("UID")), Field("tx_power", .int(Int64(u.txPower))),
                            Field("namespace", .bytes(u.namespaceID)), Field("instance", .bytes(u.instanceID))])
        case .url(let u):
            return .object([Field("frame", .text("URL")), Field("tx_power", .int(Int64(u.txPower))),
                            Field("url", .text(u.string))])
        case .tlm(let t):
            var f = [Field("frame", .text("TLM")), Field("battery_voltage_mv", .uint(UInt64(t.batteryVoltage)))]
            if let c = t.temperature {
                f.append(Field("temperature_c", .double(c)))
            } else {
                f.append(Field("temperature_c", .text("not supported")))
            }
            f.append(Field("advertising_pdu_count", .uint(UInt64(t.advertisingPDUCount))))
            f.append(Field("time_since_power_on_s", .double(Double(t.timeSincePowerOn) / 10)))
            return .object(f)
        case .encryptedTLM(let b):
            return .object([Field("frame", .text("eTLM")), Field("data", .bytes(b))])
        case .eid(let e):
            return .object([Field("frame", .text("EID")), Field("tx_power", .int(Int64(e.txPower))),
                            Field("eid", .text(Hex.pad(e.eid, 16)))])
        case .unknown(let type, let b):
            return .object([Field("frame_type", .uint(UInt64(type))), Field("data", .bytes(b))])
        }
    }
}
