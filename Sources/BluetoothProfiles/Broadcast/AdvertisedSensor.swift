// One entry point from advertising data to the sensor reading it broadcasts, for `scan
// --json`, `decode ad` and the gateway.
import BluetoothCrypto
import BluetoothWire

/// A sensor reading broadcast in advertising data: BTHome v2, Ruuvi RAWv2 or a pvvx/ATC1441
/// thermometer. A view into the advertising data's buffer.
public enum AdvertisedSensor {
    case bthome(BTHomeAdvertisement)
    case ruuvi(RuuviRAWv2)
    case thermometer(ThermometerATC)

    /// The structure of `ad` that holds a sensor frame: nil when there is none; a
    /// malformed frame of a known format is an error (with its offset in `ad`).
    public static func find(in ad: AdvertisingData) -> Result<AdvertisedSensor, WireError>? {
        var it = ad.makeIterator()
        while true {
            let s: ADStructure
            do throws(WireError) {
                guard let next = try it.next() else { return nil }
                s = next
            } catch {
                return nil  // a broken AD structure: reported by the AD decoder itself
            }
            do throws(WireError) {
                if let sensor = try Self.parse(s) { return .success(sensor) }
            } catch {
                return .failure(error)
            }
        }
    }

    /// The sensor frame in one AD structure, nil when it holds none.
    public static func parse(_ s: ADStructure) throws(WireError) -> AdvertisedSensor? {
        switch s.type {
        case .serviceData16:
            let d = try s.serviceData()
            switch d.uuid.uuid16 {
            case BTHomeAdvertisement.serviceUUID?:
                return .bthome(try BTHomeAdvertisement(parsing: d.payload, baseOffset: d.payloadOffset))
            case ThermometerATC.serviceUUID?:
                return .thermometer(try ThermometerATC(parsing: d.payload, baseOffset: d.payloadOffset))
            default:
                return nil
            }
        case .manufacturerSpecificData:
            let m = try s.manufacturerData()
            guard m.companyID == RuuviRAWv2.companyID, m.payload.first == RuuviRAWv2.dataFormat else { return nil }
            return .ruuvi(try RuuviRAWv2(parsing: m.payload, baseOffset: m.payloadOffset))
        default:
            return nil
        }
    }

    /// "bthome", "ruuvi", "pvvx" or "atc1441": the `format` field, and the gateway's
    /// measurement name.
    public var format: StaticString {
        switch self {
        case .bthome: "bthome"
        case .ruuvi: "ruuvi"
        case .thermometer(let t): t.format.name
        }
    }

    /// Writes the reading's fields (`format` first, then the measurements by name) into
    /// the object the caller has opened. `keys` decrypts encrypted BTHome for `address`.
    public func describe<S: FieldSink & ~Copyable>(into s: inout S, address: BluetoothAddress, keys: SensorKeys? = nil) {
        s.text("format", literal: format)
        switch self {
        case .bthome(let b): b.describe(into: &s, address: address, key: keys?.key(for: b.address ?? address))
        case .ruuvi(let r): r.describe(into: &s)
        case .thermometer(let t): t.describe(into: &s)
        }
    }
}

/// The bind keys of encrypted sensors, by address (`--bindkey ADDR=HEX`).
public struct SensorKeys: Sendable {
    private var entries: [(address: BluetoothAddress, key: [UInt8])] = []

    /// No keys.
    public init() {}

    /// Adds or replaces the 16-byte key of `address`.
    public mutating func set(_ key: [UInt8], for address: BluetoothAddress) {
        precondition(key.count == 16, "a bind key is 16 bytes")
        entries.removeAll { $0.address == address }
        entries.append((address, key))
    }

    /// Parses `ADDR=HEX` (32 hex digits); nil with the reason when malformed.
    public static func parse(_ text: String) -> Result<(BluetoothAddress, [UInt8]), BindKeyError> {
        guard let eq = text.firstIndex(of: "=") else { return .failure(BindKeyError(text: text, reason: "expected ADDR=KEY")) }
        guard let address = BluetoothAddress(text[..<eq]) else {
            return .failure(BindKeyError(text: text, reason: "'\(text[..<eq])' is not an address like A4:C1:38:12:34:56"))
        }
        let hex = Array(text[text.index(after: eq)...].utf8)
        guard hex.count == 32 else { return .failure(BindKeyError(text: text, reason: "the key must be 32 hex digits (16 bytes), not \(hex.count)")) }
        var key: [UInt8] = []
        for i in stride(from: 0, to: 32, by: 2) {
            guard let hi = hexDigit(hex[i]), let lo = hexDigit(hex[i + 1]) else {
                return .failure(BindKeyError(text: text, reason: "the key has a character that is not a hex digit"))
            }
            key.append(hi << 4 | lo)
        }
        return .success((address, key))
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30 ... 0x39: c - 0x30
        case 0x61 ... 0x66: c - 0x61 + 10
        case 0x41 ... 0x46: c - 0x41 + 10
        default: nil
        }
    }

    /// The key of `address`, if one was given.
    public func key(for address: BluetoothAddress) -> [UInt8]? {
        for e in entries where e.address == address { return e.key }
        return nil
    }

    /// No key was given.
    public var isEmpty: Bool { entries.isEmpty }
}

/// A malformed `--bindkey` argument.
public struct BindKeyError: Error, Sendable, CustomStringConvertible {
    /// The argument as given.
    public var text: String
    /// What is wrong with it.
    public var reason: String
    public var description: String { "bad bind key '\(text)': \(reason)" }
}

extension BTHomeAdvertisement {
    /// Decrypts the objects into `out` (at least `payload.count` bytes); false when the
    /// key does not authenticate the message (a wrong key, or a forged or damaged frame).
    public func decrypt(key: UnsafeRawBufferPointer, address: BluetoothAddress, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard isEncrypted else { return false }
        return withUnsafeTemporaryAllocation(byteCount: 13, alignment: 1) { nonce in
            self.nonce(address: address, into: nonce)
            return BluetoothCrypto.aesCCMDecrypt(key: key, nonce: UnsafeRawBufferPointer(nonce), ciphertext: payload,
                                                 mic: mic, into: out)
        }
    }

    /// Writes `version`, `encrypted`, `trigger_based` (and `counter`, `address` when sent),
    /// then the objects; an encrypted advertisement is decrypted with `key` first.
    /// Objects after one that cannot be read are lost; `error` says why.
    public func describe<S: FieldSink & ~Copyable>(into s: inout S, address: BluetoothAddress, key: [UInt8]?) {
        s.uint("version", UInt64(version))
        s.bool("encrypted", isEncrypted)
        if isTriggerBased { s.bool("trigger_based", true) }
        if let a = self.address { s.address("address", a) }
        guard isEncrypted else {
            objects.describe(into: &s)
            return
        }
        if let counter { s.uint("counter", UInt64(counter)) }
        guard let key else {
            s.text("error", literal: "encrypted: no bind key for this device (--bindkey ADDR=KEY)")
            return
        }
        withUnsafeTemporaryAllocation(byteCount: max(payload.count, 1), alignment: 1) { plain in
            let ok = key.withUnsafeBytes { decrypt(key: $0, address: self.address ?? address, into: plain) }
            if ok {
                BTHomeObjects(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(plain)[0 ..< payload.count]),
                              baseOffset: payloadOffset).describe(into: &s)
            } else {
                s.text("error", literal: "decryption failed: wrong bind key, or a damaged frame")
            }
        }
    }
}

extension BTHomeObjects {
    /// Writes each object under its name; a name that occurs more than once gets `_1`,
    /// `_2` ... in order (as bthome-ble names them for Home Assistant).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        var reader = makeReader()
        var index = 0
        while true {
            let object: BTHomeObject
            do throws(WireError) {
                guard let next = try reader.next() else { return }
                object = next
            } catch {
                s.text("error", error.description)
                return
            }
            let (ordinal, total) = occurrence(of: object.type.name, at: index)
            index += 1
            if total == 1 {
                object.describe(object.type.name.fieldName, into: &s)
            } else {
                withUnsafeTemporaryAllocation(byteCount: object.type.name.utf8CodeUnitCount + 4, alignment: 1) { buf in
                    var n = 0
                    for b in UnsafeRawBufferPointer(start: object.type.name.utf8Start, count: object.type.name.utf8CodeUnitCount) {
                        buf[n] = b
                        n += 1
                    }
                    buf[n] = UInt8(ascii: "_")
                    n += 1
                    if ordinal >= 10 {
                        buf[n] = UInt8(ascii: "0") + UInt8(ordinal / 10 % 10)
                        n += 1
                    }
                    buf[n] = UInt8(ascii: "0") + UInt8(ordinal % 10)
                    n += 1
                    object.describe(FieldName(unsafeUTF8: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buf)[0 ..< n])), into: &s)
                }
            }
        }
    }

    /// Which occurrence (1-based) of `name` the object at `index` is, and how many objects
    /// carry that name (objects are few: a second pass costs less than a table).
    func occurrence(of name: StaticString, at index: Int) -> (Int, Int) {
        var reader = makeReader()
        var i = 0, ordinal = 0, total = 0
        while let o = try? reader.next() {
            if o.type.name.sameText(name) {
                total += 1
                if i <= index { ordinal = total }
            }
            i += 1
        }
        return (ordinal, total)
    }
}

extension BTHomeObject {
    /// Writes the value as the field `name`.
    public func describe<S: FieldSink & ~Copyable>(_ name: FieldName, into s: inout S) {
        switch type.kind {
        case .number:
            if type.decimals == 0 && type.multiplier == 1 { s.int(name, raw) } else { s.double(name, number) }
        case .binary:
            s.bool(name, raw != 0)
        case .button:
            let v = UInt8(truncatingIfNeeded: raw)
            if let e = BTHomeObjectType.buttonEvent(v) { s.text(name, literal: e) } else { s.named(name, UInt64(v), literal: "unknown") }
        case .dimmer:
            s.beginObject(name)
            let event = value[0]
            if let e = BTHomeObjectType.dimmerEvent(event) { s.text("event", literal: e) } else { s.named("event", UInt64(event), literal: "unknown") }
            s.int("steps", Int64(Int8(bitPattern: value[1])))
            s.end()
        case .text:
            s.text(name, utf8: value)
        case .raw:
            s.bytes(name, value)
        case .timestamp:
            s.uint(name, UInt64(raw))
        case .firmwareVersion:
            // Least significant part first on the wire: F1 00 01 02 04 is 4.2.1.0.
            var text = ""
            for i in stride(from: value.count - 1, through: 0, by: -1) {
                text += String(value[i])
                if i > 0 { text += "." }
            }
            s.text(name, text)
        }
    }
}

extension StaticString {
    func sameText(_ other: StaticString) -> Bool {
        guard utf8CodeUnitCount == other.utf8CodeUnitCount else { return false }
        if utf8Start == other.utf8Start { return true }
        for i in 0 ..< utf8CodeUnitCount where utf8Start[i] != other.utf8Start[i] { return false }
        return true
    }

    var fieldName: FieldName { FieldName(unsafeUTF8: UnsafeRawBufferPointer(start: utf8Start, count: utf8CodeUnitCount)) }
}

extension RuuviRAWv2 {
    /// Writes the measurements; a value the tag marked "not available" is null.
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.double("temperature", temperature ?? .nan)
        s.double("humidity", humidity ?? .nan)
        s.double("pressure", pressure ?? .nan)
        s.double("acceleration_x", accelerationX.map { Double($0) / 1000 } ?? .nan)
        s.double("acceleration_y", accelerationY.map { Double($0) / 1000 } ?? .nan)
        s.double("acceleration_z", accelerationZ.map { Double($0) / 1000 } ?? .nan)
        s.double("voltage", batteryVoltage ?? .nan)
        if let p = txPower { s.int("tx_power", Int64(p)) } else { s.double("tx_power", .nan) }
        if let m = movementCounter { s.uint("movement_counter", UInt64(m)) } else { s.double("movement_counter", .nan) }
        if let q = measurementSequence { s.uint("measurement_sequence", UInt64(q)) } else { s.double("measurement_sequence", .nan) }
        if let a = address { s.address("address", a) }
    }
}

extension ThermometerATC {
    /// Writes the measurements.
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.double("temperature", temperature)
        s.double("humidity", humidity)
        s.double("voltage", Double(batteryVoltage) / 1000)
        s.uint("battery", UInt64(batteryLevel))
        s.uint("counter", UInt64(counter))
        if let flags { s.uint("flags", UInt64(flags)) }
        s.address("address", address)
    }
}
