// BTHome v2 (bthome.io): sensor objects in Service Data for the 16-bit UUID 0xFCD2, plain
// or AES-CCM encrypted with a per-device bind key. Object table and encryption layout from
// bthome.io's format and encryption pages and the reference receiver (bthome-ble).
import BluetoothWire

/// A BTHome v2 advertisement: the Service Data payload after the UUID 0xFCD2.
///
/// A view: `objects` (plain) or `ciphertext` (encrypted) borrow the caller's buffer.
public struct BTHomeAdvertisement {
    /// BTHome's Service Data UUID.
    public static let serviceUUID: UInt16 = 0xFCD2

    /// The device information byte: bit 0 encrypted, bit 1 the device's address follows
    /// (bthome-ble's reading of a reserved bit), bit 2 trigger-based, bits 5-7 version.
    public var deviceInfo: UInt8
    /// The address the advertisement carries for itself (device information bit 1), if any.
    public var address: BluetoothAddress?
    /// Plain: the objects. Encrypted: the ciphertext (as long as the objects it hides).
    public var payload: UnsafeRawBufferPointer
    /// Where `payload` starts in the parsed packet (for errors in the objects).
    public var payloadOffset: Int
    /// Encrypted only: the counter sent with it (goes into the nonce; increases).
    public var counter: UInt32?
    /// Encrypted only: the 4-byte message integrity check.
    public var mic: UnsafeRawBufferPointer

    /// Encrypted with AES-CCM: decrypt with ``decrypt(key:address:into:)``.
    public var isEncrypted: Bool { deviceInfo & 0x01 != 0 }
    /// The device sends on events (a button) rather than at regular intervals.
    public var isTriggerBased: Bool { deviceInfo & 0x04 != 0 }
    /// The BTHome version (always 2 for a parsed advertisement).
    public var version: UInt8 { deviceInfo >> 5 }

    /// Parses the Service Data payload after the UUID. Only version 2 is accepted (version
    /// 1 used other UUIDs).
    public init(parsing data: UnsafeRawBufferPointer, baseOffset: Int = 0) throws(WireError) {
        var r = ByteReader(data, baseOffset: baseOffset)
        deviceInfo = try r.u8("BTHome device information")
        guard deviceInfo >> 5 == 2 else { throw WireError(.invalidValue, at: baseOffset, "not BTHome version 2") }
        address = deviceInfo & 0x02 != 0 ? try BluetoothAddress.read(&r) : nil
        if deviceInfo & 0x01 != 0 {
            // ciphertext (at least 1 byte), counter (4, little-endian), MIC (4).
            guard r.remaining >= 9 else {
                throw r.error(.truncated, "BTHome encrypted payload shorter than counter and MIC")
            }
            payloadOffset = r.offset
            payload = try r.bytes(r.remaining - 8, "BTHome ciphertext")
            counter = try r.u32("BTHome counter")
            mic = r.rest()
        } else {
            payloadOffset = r.offset
            payload = r.rest()
            counter = nil
            mic = UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }

    /// The objects of a plain advertisement.
    public var objects: BTHomeObjects { BTHomeObjects(payload, baseOffset: payloadOffset) }

    /// The AES-CCM nonce: the address (display order), the UUID as sent (D2 FC), the device
    /// information byte and the counter as sent (little-endian): 13 bytes into `nonce`.
    public func nonce(address: BluetoothAddress, into nonce: UnsafeMutableRawBufferPointer) {
        guard nonce.count >= 13, let counter else { return }
        for i in 0 ..< 6 { nonce[i] = UInt8(truncatingIfNeeded: address.rawValue >> UInt64(40 - 8 * i)) }
        nonce[6] = 0xD2
        nonce[7] = 0xFC
        nonce[8] = deviceInfo
        for i in 0 ..< 4 { nonce[9 + i] = UInt8(truncatingIfNeeded: counter >> UInt32(8 * i)) }
    }
}

/// The objects of a BTHome advertisement, read one by one; nothing is copied.
///
/// Each object is an id and a value whose length the id fixes (text and raw carry a length
/// byte). An id this table does not know ends the objects with an error: its length is
/// unknown, so nothing after it can be read.
public struct BTHomeObjects {
    /// The object bytes.
    public let bytes: UnsafeRawBufferPointer
    /// Where errors are placed.
    public let baseOffset: Int

    /// Objects in `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer, baseOffset: Int = 0) {
        self.bytes = bytes
        self.baseOffset = baseOffset
    }

    /// A reader at the first object.
    public func makeReader() -> Reader { Reader(ByteReader(bytes, baseOffset: baseOffset)) }

    /// Reads objects in order.
    public struct Reader {
        var r: ByteReader
        init(_ r: ByteReader) { self.r = r }

        /// The next object, nil at the end.
        public mutating func next() throws(WireError) -> BTHomeObject? {
            guard !r.isAtEnd else { return nil }
            let at = r.offset
            let id = try r.u8("BTHome object id")
            guard let type = BTHomeObjectType(id: id) else {
                throw WireError(.invalidValue, at: at, "unknown BTHome object id (its length is unknown, so no more objects can be read)")
            }
            let count: Int
            if type.length == 0 {
                count = Int(try r.u8("BTHome text/raw length"))
            } else {
                count = type.length
            }
            let value = try r.bytes(count, "BTHome object value")
            return BTHomeObject(type: type, value: value)
        }
    }

    /// Checks every object can be read; the error of the first that cannot.
    public func validate() throws(WireError) {
        var reader = makeReader()
        while try reader.next() != nil {}
    }
}

/// One BTHome object: its type and its value bytes (a view).
public struct BTHomeObject {
    /// What the object is.
    public var type: BTHomeObjectType
    /// The value bytes (little-endian numbers; text and raw without their length byte).
    public var value: UnsafeRawBufferPointer

    /// The value as an integer (numeric, binary and event types; 0 for text and raw).
    public var raw: Int64 {
        guard type.length <= 8, type.kind != .text, type.kind != .raw else { return 0 }
        var u: UInt64 = 0
        for i in stride(from: value.count - 1, through: 0, by: -1) { u = u << 8 | UInt64(value[i]) }
        guard type.isSigned, value.count < 8, value.count > 0 else { return Int64(bitPattern: u) }
        let shift = UInt64(64 - 8 * value.count)
        return Int64(bitPattern: u << shift) >> Int64(shift)
    }

    /// The measured value in the type's unit (numeric types).
    public var number: Double { type.scaled(raw) }
}

/// The object types of BTHome v2: id, value length, scale, unit, name.
///
/// Every name has one unit: where BTHome has two objects for one quantity in different
/// units (distance in mm or m, volume in mL or L), the value is given in the larger one,
/// so a key of the JSON output always means the same unit. Mass in pounds keeps its own
/// name, `mass_lb`.
public struct BTHomeObjectType: Sendable {
    /// How the value is read and shown.
    public enum Kind: Sendable {
        /// A number: raw × multiplier ÷ 10^decimals, in `unit`.
        case number
        /// On/off (any non-zero value is on).
        case binary
        /// Button event (0x3A): press, double_press ...
        case button
        /// Dimmer event (0x3C): rotate_left / rotate_right with steps.
        case dimmer
        /// UTF-8 text with a length byte (0x53).
        case text
        /// Raw bytes with a length byte (0x54).
        case raw
        /// Seconds since 1970 UTC (0x50).
        case timestamp
        /// Firmware version, 3 or 4 bytes (0xF1, 0xF2).
        case firmwareVersion
    }

    /// The object id.
    public var id: UInt8
    /// The key in the JSON output and the Home Assistant entity's suffix.
    public var name: StaticString
    /// Value bytes; 0 for text and raw (length byte first).
    public var length: Int
    /// Two's-complement value.
    public var isSigned: Bool
    /// value = raw × multiplier ÷ 10^decimals.
    public var multiplier: Int64
    /// Decimal places of the scale (see `multiplier`).
    public var decimals: Int
    /// The unit ("" for none).
    public var unit: StaticString
    /// How the value is read and shown.
    public var kind: Kind

    init(_ id: UInt8, _ name: StaticString, _ length: Int, signed: Bool = false, decimals: Int = 0,
         multiplier: Int64 = 1, _ unit: StaticString = "", _ kind: Kind = .number) {
        self.id = id
        self.name = name
        self.length = length
        self.isSigned = signed
        self.multiplier = multiplier
        self.decimals = decimals
        self.unit = unit
        self.kind = kind
    }

    /// `raw` in the unit: an exact decimal divided once, so 2506 at 0.01 prints as 25.06.
    public func scaled(_ raw: Int64) -> Double {
        let v = Double(raw &* multiplier)
        switch decimals {
        case 0: return v
        case 1: return v / 10
        case 2: return v / 100
        case 3: return v / 1000
        default: return v / 1_000_000
        }
    }

    /// The type of object `id`; nil for an id BTHome v2 does not define.
    public init?(id: UInt8) {
        switch id {
        case 0x00: self.init(id, "packet_id", 1)
        case 0x01: self.init(id, "battery", 1, "%")
        case 0x02: self.init(id, "temperature", 2, signed: true, decimals: 2, "°C")
        case 0x03: self.init(id, "humidity", 2, decimals: 2, "%")
        case 0x04: self.init(id, "pressure", 3, decimals: 2, "hPa")
        case 0x05: self.init(id, "illuminance", 3, decimals: 2, "lx")
        case 0x06: self.init(id, "mass", 2, decimals: 2, "kg")
        case 0x07: self.init(id, "mass_lb", 2, decimals: 2, "lb")
        case 0x08: self.init(id, "dew_point", 2, signed: true, decimals: 2, "°C")
        case 0x09: self.init(id, "count", 1)
        case 0x0A: self.init(id, "energy", 3, decimals: 3, "kWh")
        case 0x0B: self.init(id, "power", 3, decimals: 2, "W")
        case 0x0C: self.init(id, "voltage", 2, decimals: 3, "V")
        case 0x0D: self.init(id, "pm25", 2, "µg/m³")
        case 0x0E: self.init(id, "pm10", 2, "µg/m³")
        case 0x0F: self.init(id, "generic_boolean", 1, "", .binary)
        case 0x10: self.init(id, "power_on", 1, "", .binary)
        case 0x11: self.init(id, "opening", 1, "", .binary)
        case 0x12: self.init(id, "co2", 2, "ppm")
        case 0x13: self.init(id, "tvoc", 2, "µg/m³")
        case 0x14: self.init(id, "moisture", 2, decimals: 2, "%")
        case 0x15: self.init(id, "battery_low", 1, "", .binary)
        case 0x16: self.init(id, "battery_charging", 1, "", .binary)
        case 0x17: self.init(id, "carbon_monoxide", 1, "", .binary)
        case 0x18: self.init(id, "cold", 1, "", .binary)
        case 0x19: self.init(id, "connectivity", 1, "", .binary)
        case 0x1A: self.init(id, "door", 1, "", .binary)
        case 0x1B: self.init(id, "garage_door", 1, "", .binary)
        case 0x1C: self.init(id, "gas_detected", 1, "", .binary)
        case 0x1D: self.init(id, "heat", 1, "", .binary)
        case 0x1E: self.init(id, "light", 1, "", .binary)
        case 0x1F: self.init(id, "lock", 1, "", .binary)
        case 0x20: self.init(id, "moisture_detected", 1, "", .binary)
        case 0x21: self.init(id, "motion", 1, "", .binary)
        case 0x22: self.init(id, "moving", 1, "", .binary)
        case 0x23: self.init(id, "occupancy", 1, "", .binary)
        case 0x24: self.init(id, "plug", 1, "", .binary)
        case 0x25: self.init(id, "presence", 1, "", .binary)
        case 0x26: self.init(id, "problem", 1, "", .binary)
        case 0x27: self.init(id, "running", 1, "", .binary)
        case 0x28: self.init(id, "safety", 1, "", .binary)
        case 0x29: self.init(id, "smoke", 1, "", .binary)
        case 0x2A: self.init(id, "sound", 1, "", .binary)
        case 0x2B: self.init(id, "tamper", 1, "", .binary)
        case 0x2C: self.init(id, "vibration", 1, "", .binary)
        case 0x2D: self.init(id, "window", 1, "", .binary)
        case 0x2E: self.init(id, "humidity", 1, "%")
        case 0x2F: self.init(id, "moisture", 1, "%")
        case 0x3A: self.init(id, "button", 1, "", .button)
        case 0x3C: self.init(id, "dimmer", 2, "", .dimmer)
        case 0x3D: self.init(id, "count", 2)
        case 0x3E: self.init(id, "count", 4)
        case 0x3F: self.init(id, "rotation", 2, signed: true, decimals: 1, "°")
        case 0x40: self.init(id, "distance", 2, decimals: 3, "m")
        case 0x41: self.init(id, "distance", 2, decimals: 1, "m")
        case 0x42: self.init(id, "duration", 3, decimals: 3, "s")
        case 0x43: self.init(id, "current", 2, decimals: 3, "A")
        case 0x44: self.init(id, "speed", 2, decimals: 2, "m/s")
        case 0x45: self.init(id, "temperature", 2, signed: true, decimals: 1, "°C")
        case 0x46: self.init(id, "uv_index", 1, decimals: 1)
        case 0x47: self.init(id, "volume", 2, decimals: 1, "L")
        case 0x48: self.init(id, "volume", 2, decimals: 3, "L")
        case 0x49: self.init(id, "volume_flow_rate", 2, decimals: 3, "m³/h")
        case 0x4A: self.init(id, "voltage", 2, decimals: 1, "V")
        case 0x4B: self.init(id, "gas", 3, decimals: 3, "m³")
        case 0x4C: self.init(id, "gas", 4, decimals: 3, "m³")
        case 0x4D: self.init(id, "energy", 4, decimals: 3, "kWh")
        case 0x4E: self.init(id, "volume", 4, decimals: 3, "L")
        case 0x4F: self.init(id, "water", 4, decimals: 3, "L")
        case 0x50: self.init(id, "timestamp", 4, "s", .timestamp)
        case 0x51: self.init(id, "acceleration", 2, decimals: 3, "m/s²")
        case 0x52: self.init(id, "gyroscope", 2, decimals: 3, "°/s")
        case 0x53: self.init(id, "text", 0, "", .text)
        case 0x54: self.init(id, "raw", 0, "", .raw)
        case 0x55: self.init(id, "volume_storage", 4, decimals: 3, "L")
        case 0x56: self.init(id, "conductivity", 2, "µS/cm")
        case 0x57: self.init(id, "temperature", 1, signed: true, "°C")
        case 0x58: self.init(id, "temperature", 1, signed: true, decimals: 2, multiplier: 35, "°C")
        case 0x59: self.init(id, "count", 1, signed: true)
        case 0x5A: self.init(id, "count", 2, signed: true)
        case 0x5B: self.init(id, "count", 4, signed: true)
        case 0x5C: self.init(id, "power", 4, signed: true, decimals: 2, "W")
        case 0x5D: self.init(id, "current", 2, signed: true, decimals: 3, "A")
        case 0x5E: self.init(id, "direction", 2, decimals: 2, "°")
        case 0x5F: self.init(id, "precipitation", 2, decimals: 1, "mm")
        case 0x60: self.init(id, "channel", 1)
        case 0x61: self.init(id, "rotational_speed", 2, "rpm")
        case 0x62: self.init(id, "speed", 4, signed: true, decimals: 6, "m/s")
        case 0x63: self.init(id, "acceleration", 4, signed: true, decimals: 6, "m/s²")
        case 0x64: self.init(id, "light_level", 1)
        case 0xF0: self.init(id, "device_type_id", 2)
        case 0xF1: self.init(id, "firmware_version", 4, "", .firmwareVersion)
        case 0xF2: self.init(id, "firmware_version", 3, "", .firmwareVersion)
        default: return nil
        }
    }

    /// Button event names (0x3A); nil for a value BTHome does not define.
    public static func buttonEvent(_ raw: UInt8) -> StaticString? {
        switch raw {
        case 0x00: "none"
        case 0x01: "press"
        case 0x02: "double_press"
        case 0x03: "triple_press"
        case 0x04: "long_press"
        case 0x05: "long_double_press"
        case 0x06: "long_triple_press"
        case 0x80: "hold_press"
        default: nil
        }
    }

    /// Dimmer event names (0x3C, first byte); nil for a value BTHome does not define.
    public static func dimmerEvent(_ raw: UInt8) -> StaticString? {
        switch raw {
        case 0x00: "none"
        case 0x01: "rotate_left"
        case 0x02: "rotate_right"
        default: nil
        }
    }
}
