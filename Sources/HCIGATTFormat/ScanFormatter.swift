import BluetoothHost
import BluetoothProfiles
import BluetoothWire

/// Formats scan results as tidy text lines or JSON Lines. Shared by `scan` (live),
/// `replay` (from a btsnoop file) and the benchmarks, so all print the same thing for
/// the same packets.
public struct ScanFormatter: Sendable {
    /// JSON Lines (else text).
    public var json: Bool
    /// Time origin (ns) for the `time` field: the scan start or the first packet.
    public var origin: UInt64
    /// NEW lines so far: devices discovered. A device the scanner forgot (60 s unheard, or
    /// evicted from its 4096-device table) counts again when it comes back; a set of every
    /// address ever shown would grow without bound in a crowd of rotating addresses.
    public private(set) var devicesShown = 0
    /// Lines formatted so far.
    public private(set) var linesFormatted = 0
    /// Names of services, companies and appearances found before.
    private var names = NameCache()
    /// The JSON of service lists and manufacturer data written before.
    private var structureCache = StructureJSONCache()
    /// JSON lines write the common AD structures straight (false: all through the writer,
    /// the reference the tests compare the direct path with).
    var directStructures = true
    /// Bind keys for encrypted sensor broadcasts (BTHome), by address.
    public var sensorKeys: SensorKeys?

    /// A formatter; `origin` is the time the `time` field counts from.
    public init(json: Bool, origin: UInt64) {
        self.json = json
        self.origin = origin
    }

    /// The line to print for `event` (no final newline). For a few lines; a stream of
    /// them goes through ``write(_:into:)`` and one buffer.
    public mutating func format(_ event: ScanEvent) -> String {
        var w = FieldWriter(format: json ? .json : .text, out: OutputBuffer(capacity: 1024))
        write(event, into: &w)
        w.out.removeLast()
        return w.out.string
    }

    /// Appends the line for `event`, newline included, to the writer's buffer.
    public mutating func write(_ event: ScanEvent, into w: inout FieldWriter) {
        let (device, isNew) = switch event {
        case .discovered(let d): (d, true)
        case .updated(let d): (d, false)
        }
        write(device, isNew: isNew, into: &w)
    }

    /// Appends the line for `device` (`NEW`/`"new"` when `isNew`, else an update).
    public mutating func write(_ device: DiscoveredDevice, isNew: Bool, into w: inout FieldWriter) {
        if isNew { devicesShown += 1 }
        linesFormatted += 1
        device.withSummary { summary in
            if w.format == .json {
                jsonLine(device, summary, isNew: isNew, into: &w)
            } else {
                textLine(device, summary, isNew: isNew, into: &w.out)
            }
        }
    }

    /// "180D Heart Rate" (or the UUID alone when it has no name).
    public static func serviceName(_ u: BluetoothUUID) -> String {
        AssignedNumbers.serviceName(u) ?? AssignedNumbers.uuidName(u) ?? u.description
    }

    /// The text line: `NEW|UPD ADDRESS KIND RSSI "NAME" extras`, columns padded.
    mutating func textLine(_ d: DiscoveredDevice, _ a: ADSummary, isNew: Bool, into out: inout OutputBuffer) {
        if isNew { out.raw("NEW ") } else { out.raw("UPD ") }
        out.address(d.address.address)
        out.byte(UInt8(ascii: " "))
        let kind = d.address.kind.shortName
        out.raw(kind)
        out.repeated(UInt8(ascii: " "), max(1, 7 - kind.utf8CodeUnitCount))
        if let rssi = d.rssi {
            let width = (rssi < 0 ? 1 : 0) + (rssi.magnitude >= 100 ? 3 : rssi.magnitude >= 10 ? 2 : 1) + 4
            out.repeated(UInt8(ascii: " "), 8 - width)
            out.decimal(Int64(rssi))
            out.raw(" dBm")
        } else {
            out.raw("   ? dBm")
        }
        out.raw("  ")
        if let name = a.name {
            let start = out.count
            out.byte(UInt8(ascii: "\""))
            out.utf8Repairing(name)
            out.byte(UInt8(ascii: "\""))
            // Padded in characters, as the String would be: bytes when it is printable ASCII
            // (a CR LF pair or a combining mark next to a quote is one character).
            let written = out.count - start
            let plain = name.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
            let width = plain ? written : ("\"" + String(decoding: name, as: UTF8.self) + "\"").count
            out.repeated(UInt8(ascii: " "), width >= 22 ? 1 : 22 - width)
        } else {
            out.raw("(no name)")
            out.repeated(UInt8(ascii: " "), 13)
        }
        var extras = 0
        func separator(_ out: inout OutputBuffer) {
            if extras > 0 { out.raw("  |  ") }
            extras += 1
        }
        if let id = d.identity {
            separator(&out)
            out.raw("identity ")
            out.address(id.address)
            out.raw(" (")
            out.utf8(id.type.description)
            out.byte(UInt8(ascii: ")"))
        }
        if a.hasServiceUUIDs {
            separator(&out)
            var first = true
            a.forEachServiceUUID { u in
                if !first { out.raw(", ") }
                first = false
                // The name (see ``serviceName(_:)``), or the UUID when it has none.
                if let v = u.uuid16, let n = names.name(.service, v) { out.append(UnsafeRawBufferPointer(n.utf8)) } else { out.uuid(u) }
            }
        }
        if let m = a.manufacturerData {
            separator(&out)
            if let n = names.name(.company, m.companyID) { out.append(UnsafeRawBufferPointer(n.utf8)) } else {
                out.raw("company 0x")
                out.hexUpper(UInt64(m.companyID), width: 4)
            }
            out.raw(": ")
            out.hexLower(m.payload)
        }
        if let ap = a.appearance, ap.rawValue != 0 {
            separator(&out)
            if let n = names.name(.appearance, ap.rawValue) { out.append(UnsafeRawBufferPointer(n.utf8)) } else {
                out.raw("appearance 0x")
                out.hexUpper(UInt64(ap.rawValue), width: 4)
            }
        }
        if let tx = d.txPower(a) {
            separator(&out)
            out.raw("tx ")
            out.decimal(Int64(tx))
            out.raw(" dBm")
        }
        if !d.eventType.connectable {
            separator(&out)
            out.raw("non-connectable")
        }
        switch Self.sensor(a) {
        case .success(let reading)?:
            separator(&out)
            out.append(UnsafeRawBufferPointer(start: reading.format.utf8Start, count: reading.format.utf8CodeUnitCount))
            // `format` is the label just written: the sink leaves it out.
            let keys = sensorKeys
            withUnsafeMutablePointer(to: &out) { p in
                var sink = KeyValueSink(p)
                reading.describe(into: &sink, address: d.address.address, keys: keys)
            }
        case .failure(let error)?:
            separator(&out)
            out.raw("sensor: ")
            out.utf8(error.description)
        case nil:
            break
        }
        if a.malformed {
            separator(&out)
            out.raw("MALFORMED DATA")
        }
        out.byte(UInt8(ascii: "\n"))
    }

    /// The JSON line (`"event":"new"` or `"update"`).
    mutating func jsonLine(_ d: DiscoveredDevice, _ a: ADSummary, isNew: Bool, into w: inout FieldWriter) {
        // The line's own keys are written straight (their order is fixed: no writer state to
        // keep); the AD structures go through the writer, as for `decode ad`.
        if isNew { w.out.raw("{\"event\":\"new\",\"time\":") } else { w.out.raw("{\"event\":\"update\",\"time\":") }
        w.out.seconds(nanoseconds: d.lastSeen >= origin ? d.lastSeen &- origin : 0)
        w.out.raw(",\"address\":\"")
        w.out.address(d.address.address)
        w.out.raw("\",\"address_type\":")
        if let t = d.address.type.nameLiteral { w.out.jsonLiteral(t) } else { w.out.jsonString(d.address.type.description) }
        w.out.raw(",\"address_kind\":")
        w.out.jsonLiteral(d.address.kind.nameLiteral)
        if let id = d.identity {
            // A bonded peer's private address, resolved with its IRK.
            w.out.raw(",\"identity\":\"")
            w.out.address(id.address)
            w.out.raw("\",\"identity_type\":")
            w.out.jsonString(id.type.description)
        }
        if let rssi = d.rssi {
            w.out.raw(",\"rssi\":")
            w.out.decimal(Int64(rssi))
        } else {
            w.out.raw(",\"rssi\":\"unavailable\"")
        }
        if let tx = d.txPower(a) {
            w.out.raw(",\"tx_power\":")
            w.out.decimal(Int64(tx))
        }
        if let name = a.name {
            w.out.raw(",\"name\":")
            w.out.jsonString(repairing: name)
        }
        if let (count, values) = a.serviceUUIDs16 {
            writeServices16(count, values, into: &w.out)
        } else {
            writeServices(a, into: &w.out)
        }
        if a.hasServiceData {
            w.out.raw(",\"service_data_uuids\":[")
            var first = true
            a.forEachServiceDataUUID { u in
                if !first { w.out.byte(UInt8(ascii: ",")) }
                first = false
                w.out.byte(UInt8(ascii: "\""))
                w.out.uuid(u)
                w.out.byte(UInt8(ascii: "\""))
            }
            w.out.byte(UInt8(ascii: "]"))
        }
        if let m = a.manufacturerData {
            w.out.raw(",\"manufacturer\":{\"company_id\":")
            w.out.decimal(UInt64(m.companyID))
            if names.name(.company, m.companyID) != nil {
                w.out.raw(",\"company\":")
                _ = names.writeJSON(.company, m.companyID, into: &w.out)
            }
            w.out.raw(",\"data\":\"")
            w.out.hexLower(m.payload)
            w.out.raw("\"}")
        }
        if let ap = a.appearance {
            w.out.raw(",\"appearance\":{\"value\":")
            w.out.decimal(UInt64(ap.rawValue))
            w.out.raw(",\"name\":")
            if !names.writeJSON(.appearance, ap.rawValue, into: &w.out) {
                w.out.raw("\"unknown\"")
            }
            w.out.byte(UInt8(ascii: "}"))
        }
        if let flags = a.flags {
            w.out.raw(",\"flags\":")
            w.out.decimal(UInt64(flags.rawValue))
        }
        w.out.raw(d.eventType.connectable ? ",\"connectable\":true" : ",\"connectable\":false")
        w.out.raw(d.eventType.scannable ? ",\"scannable\":true,\"pdu\":" : ",\"scannable\":false,\"pdu\":")
        w.out.jsonLiteral(d.eventType.pduNameLiteral)
        if d.eventType.extendedReport {
            w.out.raw(",\"report\":\"extended\",\"primary_phy\":")
            w.out.jsonString(d.eventType.primaryPHY.name ?? "unknown")
            w.out.raw(",\"secondary_phy\":")
            w.out.jsonString(d.eventType.secondaryPHY.name ?? "none")
            if let sid = d.eventType.sid {
                w.out.raw(",\"sid\":")
                w.out.decimal(UInt64(sid))
            }
        } else {
            w.out.raw(",\"report\":\"legacy\"")
        }
        w.out.raw(",\"reports\":")
        w.out.decimal(UInt64(d.reportCount))
        w.out.raw(",\"advertising_data\":\"")
        w.out.hexLower(a.advertisingData)
        w.out.raw("\",\"scan_response\":\"")
        w.out.hexLower(a.scanResponseData)
        w.out.byte(UInt8(ascii: "\""))
        // The structures: the common types written straight, anything else through the
        // writer (inside an object already open); the same bytes either way.
        let adDone = directStructures && writeStructures(",\"ad\":[", a.advertisingData, into: &w.out)
        // The scan response is tried directly only after a direct `ad` (the keys' order).
        let srDone = a.scanResponseData.isEmpty
            || (adDone && writeStructures(",\"scan_response_ad\":[", a.scanResponseData, into: &w.out))
        let sensor = Self.sensor(a)
        if adDone, srDone, sensor == nil {
            if a.malformed { w.out.raw(",\"malformed\":true") }
            w.out.raw("}\n")
            return
        }
        w.beginRecordContinuing()
        if !adDone { Self.structures("ad", a.advertisingData, into: &w) }
        if !srDone {
            // After a direct `ad`, the scan response was tried directly already and declined.
            let direct = !adDone && directStructures && writeStructures(",\"scan_response_ad\":[", a.scanResponseData, into: &w.out)
            if !direct { Self.structures("scan_response_ad", a.scanResponseData, into: &w) }
        }
        switch sensor {
        case .success(let reading)?:
            w.beginObject("sensor")
            reading.describe(into: &w, address: d.address.address, keys: sensorKeys)
            w.end()
        case .failure(let error)?:
            w.text("sensor_error", error.description)
        case nil:
            break
        }
        if a.malformed { w.bool("malformed", true) }
        w.endRecord()
    }

    /// `,"services":[…],"service_names":[…]` of any service UUIDs.
    mutating func writeServices(_ a: ADSummary, into out: inout OutputBuffer) {
        out.raw(",\"services\":[")
        var first = true
        a.forEachServiceUUID { u in
            if !first { out.byte(UInt8(ascii: ",")) }
            first = false
            out.byte(UInt8(ascii: "\""))
            out.uuid(u)
            out.byte(UInt8(ascii: "\""))
        }
        out.raw("],\"service_names\":[")
        first = true
        a.forEachServiceUUID { u in
            if !first { out.byte(UInt8(ascii: ",")) }
            first = false
            if let v = u.uuid16, names.writeJSON(.service, v, into: &out) {
            } else {
                out.byte(UInt8(ascii: "\""))
                out.uuid(u)
                out.byte(UInt8(ascii: "\""))
            }
        }
        out.byte(UInt8(ascii: "]"))
    }

    /// The same for up to eight 16-bit UUIDs: from the cache when the list was seen before
    /// (keyed by the UUIDs' bytes under type 0, which no cached AD structure has).
    mutating func writeServices16(_ count: Int, _ values: InlineArray<8, UInt16>, into out: inout OutputBuffer) {
        var key = InlineArray<16, UInt8>(repeating: 0)
        for i in 0 ..< count {
            key[2 &* i] = UInt8(truncatingIfNeeded: values[i])
            key[2 &* i &+ 1] = UInt8(truncatingIfNeeded: values[i] >> 8)
        }
        key.span.withUnsafeBytes { all in
            let bytes = UnsafeRawBufferPointer(rebasing: all[0 ..< 2 &* count])
            if structureCache.write(0x00, bytes, into: &out) { return }
            let start = out.count
            out.raw(",\"services\":[")
            for i in 0 ..< count {
                if i > 0 { out.byte(UInt8(ascii: ",")) }
                out.byte(UInt8(ascii: "\""))
                out.hexUpper(UInt64(values[i]), width: 4)
                out.byte(UInt8(ascii: "\""))
            }
            out.raw("],\"service_names\":[")
            for i in 0 ..< count {
                if i > 0 { out.byte(UInt8(ascii: ",")) }
                if !names.writeJSON(.service, values[i], into: &out) {
                    out.byte(UInt8(ascii: "\""))
                    out.hexUpper(UInt64(values[i]), width: 4)
                    out.byte(UInt8(ascii: "\""))
                }
            }
            out.byte(UInt8(ascii: "]"))
            out.withBytes { all in structureCache.store(0x00, bytes, rendered: UnsafeRawBufferPointer(rebasing: all[start...])) }
        }
    }

    /// The AD structures of `bytes` as JSON (`opening` is `,"key":[`), written straight for
    /// the types nearly every advertisement is made of: flags, 16-bit service UUIDs, names,
    /// TX power, manufacturer data (not iBeacon). False, having taken back what it wrote,
    /// when a structure is of another type or shape: ``structures(_:_:into:)`` writes them
    /// then. Byte for byte what the writer gives (`FastStructureTests` compares the two).
    @inline(never)  // one copy for the four call sites (the static binary's size)
    mutating func writeStructures(_ opening: StaticString, _ bytes: UnsafeRawBufferPointer, into out: inout OutputBuffer) -> Bool {
        let rollback = out.count
        out.raw(opening)
        let fragments = ADJSONFragments.shared
        var it = AdvertisingData(bytes).makeIterator()
        var first = true
        while let s = try? it.next() {
            if first { first = false } else { out.byte(UInt8(ascii: ",")) }
            let type = s.type.rawValue
            // Service lists and manufacturer data repeat from line to line: from the cache
            // (which holds only structures that were written here, so valid ones).
            let cached = type == 0x02 || type == 0x03 || type == 0xFF
            if cached && structureCache.write(type, s.data, into: &out) { continue }
            // One pass: a structure this path does not write takes back the whole list.
            switch type {
            case 0x01: break
            case 0x02, 0x03: if s.data.count % 2 != 0 { out.removeLast(out.count &- rollback); return false }
            case 0x08, 0x09: if !OutputBuffer.isValidUTF8(s.data) { out.removeLast(out.count &- rollback); return false }
            case 0x0A: if s.data.count != 1 { out.removeLast(out.count &- rollback); return false }
            case 0xFF:
                guard let m = try? s.manufacturerData(), m.iBeacon == nil else {
                    out.removeLast(out.count &- rollback)
                    return false
                }
            default:
                out.removeLast(out.count &- rollback)
                return false
            }
            let start = out.count
            out.raw("{\"length\":")
            out.decimal(UInt64(s.data.count &+ 1))
            fragments.type(type, into: &out)
            switch type {
            case 0x01:
                fragments.flags(s.data.first ?? 0, into: &out)
            case 0x02, 0x03:
                out.byte(UInt8(ascii: "["))
                var i = 0
                while i &+ 1 < s.data.count {
                    if i > 0 { out.byte(UInt8(ascii: ",")) }
                    out.byte(UInt8(ascii: "\""))
                    out.hexUpper(UInt64(s.data[i]) | UInt64(s.data[i &+ 1]) << 8, width: 4)
                    out.byte(UInt8(ascii: "\""))
                    i &+= 2
                }
                out.byte(UInt8(ascii: "]"))
            case 0x08, 0x09:
                out.jsonString(s.data)
            case 0x0A:
                out.decimal(Int64(Int8(bitPattern: s.data[0])))
            default:  // 0xFF, checked above
                let company = UInt16(s.data[0]) | UInt16(s.data[1]) << 8
                out.raw("{\"company_id\":{\"value\":")
                out.decimal(UInt64(company))
                out.raw(",\"name\":")
                if !names.writeJSON(.company, company, into: &out) { out.raw("\"unknown\"") }
                out.raw("},\"data\":\"")
                out.hexLower(UnsafeRawBufferPointer(rebasing: s.data[2...]))
                out.raw("\"}")
            }
            out.byte(UInt8(ascii: "}"))
            if cached {
                out.withBytes { all in
                    structureCache.store(type, s.data, rendered: UnsafeRawBufferPointer(rebasing: all[start...]))
                }
            }
        }
        out.byte(UInt8(ascii: "]"))
        return true
    }

    /// The sensor reading a device broadcasts (BTHome, Ruuvi, pvvx/ATC1441), in its
    /// advertising data or else its scan response; nil when it sends none.
    public static func sensor(_ a: ADSummary) -> Result<AdvertisedSensor, WireError>? {
        // Sensor frames are in 16-bit service data or Ruuvi's manufacturer data: most
        // lines have neither, known from the summary without another walk.
        if a.serviceData16Count == 0 {
            if a.manufacturerDataCount == 0 { return nil }
            if a.manufacturerDataCount == 1, let m = a.manufacturerData, m.companyID != RuuviRAWv2.companyID { return nil }
        }
        return AdvertisedSensor.find(in: AdvertisingData(a.advertisingData)) ?? AdvertisedSensor.find(in: AdvertisingData(a.scanResponseData))
    }

    /// The AD structures of `bytes` as a list of objects (up to a layout error).
    static func structures(_ name: FieldName, _ bytes: UnsafeRawBufferPointer, into w: inout FieldWriter) {
        w.beginList(name, count: 0)
        var it = AdvertisingData(bytes).makeIterator()
        while let s = try? it.next() {
            w.beginObject("")
            s.describe(into: &w)
            w.end()
        }
        w.end()
    }
}

extension LEAddress.Kind {
    /// `rawValue` as static text.
    var nameLiteral: StaticString {
        switch self {
        case .public: "public"
        case .randomStatic: "random-static"
        case .resolvablePrivate: "resolvable-private"
        case .nonResolvablePrivate: "non-resolvable-private"
        case .reservedRandom: "reserved-random"
        case .anonymous: "anonymous"
        }
    }

    /// Short label for the text column.
    var shortName: StaticString {
        switch self {
        case .public: "public"
        case .randomStatic: "static"
        case .resolvablePrivate: "rpa"
        case .nonResolvablePrivate: "nrpa"
        case .reservedRandom: "random?"
        case .anonymous: "anon"
        }
    }
}
