// Beacon formats carried inside AD structures. Views point into the caller's buffer and
// are valid only while it is alive; recognising and decoding them never allocates.

/// Apple iBeacon: Manufacturer Specific Data for company 0x004C whose payload is
/// `02 15 | proximity UUID (16, big-endian) | major (u16 BE) | minor (u16 BE) | measured power (i8)`.
public struct IBeacon: Hashable, Sendable {
    /// The proximity UUID.
    public var proximityUUID: BluetoothUUID
    /// Major.
    public var major: UInt16
    /// Minor.
    public var minor: UInt16
    /// RSSI at 1 m, dBm.
    public var measuredPower: Int8

    /// Apple's company identifier (0x004C).
    public static let companyID: UInt16 = 0x004C
    /// Payload length after the company identifier.
    public static let payloadLength = 23

    /// A value with these fields.
    @inlinable
    public init(proximityUUID: BluetoothUUID, major: UInt16, minor: UInt16, measuredPower: Int8) {
        self.proximityUUID = proximityUUID
        self.major = major
        self.minor = minor
        self.measuredPower = measuredPower
    }

    /// Recognises an iBeacon in manufacturer data; nil when it is anything else.
    @inlinable
    public init?(_ m: ADManufacturerData) {
        let p = m.payload
        guard m.companyID == IBeacon.companyID, p.count == IBeacon.payloadLength,
              p.load(fromByteOffset: 0, as: UInt8.self) == 0x02,
              p.load(fromByteOffset: 1, as: UInt8.self) == 0x15 else { return nil }
        let hi = UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt64.self))
        let lo = UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 10, as: UInt64.self))
        self.proximityUUID = BluetoothUUID(high: hi, low: lo)
        self.major = UInt16(bigEndian: p.loadUnaligned(fromByteOffset: 18, as: UInt16.self))
        self.minor = UInt16(bigEndian: p.loadUnaligned(fromByteOffset: 20, as: UInt16.self))
        self.measuredPower = Int8(bitPattern: p.load(fromByteOffset: 22, as: UInt8.self))
    }

    /// The 23-byte manufacturer payload (after the company identifier).
    public var manufacturerPayload: [UInt8] {
        var out: [UInt8] = [0x02, 0x15]
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: proximityUUID.high >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: proximityUUID.low >> UInt64(shift))) }
        out += [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF), UInt8(bitPattern: measuredPower)]
        return out
    }
}

extension ADManufacturerData {
    /// The iBeacon this data holds, or nil.
    @inlinable public var iBeacon: IBeacon? { IBeacon(self) }
}

/// Eddystone-UID: a 10-byte namespace and 6-byte instance identifier.
public struct EddystoneUID {
    /// Calibrated TX power at 0 m, dBm.
    public let txPower: Int8
    /// The 10-byte namespace (a view).
    public let namespaceID: UnsafeRawBufferPointer
    /// The 6-byte instance (a view).
    public let instanceID: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable
    public init(txPower: Int8, namespaceID: UnsafeRawBufferPointer, instanceID: UnsafeRawBufferPointer) {
        self.txPower = txPower
        self.namespaceID = namespaceID
        self.instanceID = instanceID
    }
}

/// Eddystone-URL: a scheme prefix code and an encoded URL with expansion codes.
public struct EddystoneURL {
    /// The calibrated TX power at 0 m, dBm.
    public let txPower: Int8
    /// 0 "http://www.", 1 "https://www.", 2 "http://", 3 "https://".
    public let scheme: UInt8
    /// The encoded URL after the scheme (a view).
    public let encodedURL: UnsafeRawBufferPointer

    /// A value with these fields.
    @inlinable
    public init(txPower: Int8, scheme: UInt8, encodedURL: UnsafeRawBufferPointer) {
        self.txPower = txPower
        self.scheme = scheme
        self.encodedURL = encodedURL
    }

    /// The URL scheme of an Eddystone-URL scheme code ("https://www."...).
    public static func schemePrefix(_ code: UInt8) -> String? {
        switch code {
        case 0: "http://www."
        case 1: "https://www."
        case 2: "http://"
        case 3: "https://"
        default: nil
        }
    }

    /// The text an Eddystone-URL expansion code stands for (".com/"...).
    public static func expansion(_ code: UInt8) -> String? {
        switch code {
        case 0x00: ".com/"
        case 0x01: ".org/"
        case 0x02: ".edu/"
        case 0x03: ".net/"
        case 0x04: ".info/"
        case 0x05: ".biz/"
        case 0x06: ".gov/"
        case 0x07: ".com"
        case 0x08: ".org"
        case 0x09: ".edu"
        case 0x0A: ".net"
        case 0x0B: ".info"
        case 0x0C: ".biz"
        case 0x0D: ".gov"
        default: nil
        }
    }

    /// The expanded URL (allocates: display only).
    public var string: String {
        var s = EddystoneURL.schemePrefix(scheme) ?? ""
        for b in encodedURL {
            if let e = EddystoneURL.expansion(b) { s += e } else { s.unicodeScalars.append(Unicode.Scalar(b)) }
        }
        return s
    }
}

/// Eddystone-TLM version 0 (unencrypted telemetry). Multi-byte fields are big-endian.
public struct EddystoneTLM: Hashable, Sendable {
    /// Battery voltage in mV; 0 when not supported.
    public var batteryVoltage: UInt16
    /// Beacon temperature, signed 8.8 fixed point; 0x8000 when not supported.
    public var rawTemperature: Int16
    /// Advertising PDUs sent since power-up.
    public var advertisingPDUCount: UInt32
    /// Time since power-on or reboot in 0.1 s units.
    public var timeSincePowerOn: UInt32

    /// A value with these fields.
    @inlinable
    public init(batteryVoltage: UInt16, rawTemperature: Int16, advertisingPDUCount: UInt32, timeSincePowerOn: UInt32) {
        self.batteryVoltage = batteryVoltage
        self.rawTemperature = rawTemperature
        self.advertisingPDUCount = advertisingPDUCount
        self.timeSincePowerOn = timeSincePowerOn
    }

    /// Degrees Celsius, or nil when not supported.
    @inlinable public var temperature: Double? {
        rawTemperature == Int16.min ? nil : Double(rawTemperature) / 256
    }
}

/// Eddystone-EID: an 8-byte rotating ephemeral identifier.
public struct EddystoneEID: Hashable, Sendable {
    /// The calibrated TX power at 0 m, dBm.
    public var txPower: Int8
    /// The identifier's 8 bytes, first byte most significant.
    public var eid: UInt64

    /// A value with these fields.
    @inlinable
    public init(txPower: Int8, eid: UInt64) {
        self.txPower = txPower
        self.eid = eid
    }
}

/// An Eddystone frame: Service Data for the 16-bit UUID 0xFEAA whose first byte is the
/// frame type.
public enum EddystoneFrame {
    case uid(EddystoneUID)
    case url(EddystoneURL)
    case tlm(EddystoneTLM)
    /// TLM version 1: 12 bytes of encrypted telemetry, 2-byte salt, 2-byte MIC.
    case encryptedTLM(UnsafeRawBufferPointer)
    case eid(EddystoneEID)
    case unknown(frameType: UInt8, UnsafeRawBufferPointer)

    /// The Eddystone service UUID (0xFEAA).
    public static let serviceUUID: UInt16 = 0xFEAA

    /// Parses the service data payload (after the UUID). `baseOffset` places errors.
    @inlinable
    public init(parsing payload: UnsafeRawBufferPointer, baseOffset: Int = 0) throws(WireError) {
        var r = ByteReader(payload, baseOffset: baseOffset)
        let frameType = try r.u8("Eddystone frame type")
        switch frameType {
        case 0x00:
            let tx = try r.i8("Eddystone-UID TX power")
            let namespace = try r.bytes(10, "Eddystone-UID namespace")
            let instance = try r.bytes(6, "Eddystone-UID instance")
            // Two reserved bytes follow in the full frame; some beacons omit them.
            if r.remaining != 0 && r.remaining != 2 {
                throw r.error(.invalidLength, "Eddystone-UID frame must be 18 or 20 bytes")
            }
            self = .uid(EddystoneUID(txPower: tx, namespaceID: namespace, instanceID: instance))
        case 0x10:
            let tx = try r.i8("Eddystone-URL TX power")
            let schemeOffset = r.offset
            let scheme = try r.u8("Eddystone-URL scheme")
            guard scheme <= 3 else { throw WireError(.invalidValue, at: schemeOffset, "Eddystone-URL scheme prefix must be 0...3") }
            let url = r.rest()
            for i in 0 ..< url.count {
                let b = url[i]
                guard b <= 0x0D || (b >= 0x21 && b <= 0x7E) else {
                    throw WireError(.invalidValue, at: schemeOffset &+ 1 &+ i, "Eddystone-URL byte is a reserved code")
                }
            }
            self = .url(EddystoneURL(txPower: tx, scheme: scheme, encodedURL: url))
        case 0x20:
            let versionOffset = r.offset
            let version = try r.u8("Eddystone-TLM version")
            switch version {
            case 0x00:
                let tlm = EddystoneTLM(
                    batteryVoltage: try r.u16("Eddystone-TLM battery voltage").byteSwapped,
                    rawTemperature: Int16(bitPattern: try r.u16("Eddystone-TLM temperature").byteSwapped),
                    advertisingPDUCount: try r.u32("Eddystone-TLM advertising PDU count").byteSwapped,
                    timeSincePowerOn: try r.u32("Eddystone-TLM time since power-on").byteSwapped)
                try r.expectEnd("bytes after the Eddystone-TLM frame")
                self = .tlm(tlm)
            case 0x01:
                let etlm = try r.bytes(16, "Eddystone-eTLM")
                try r.expectEnd("bytes after the Eddystone-eTLM frame")
                self = .encryptedTLM(etlm)
            default:
                throw WireError(.invalidValue, at: versionOffset, "Eddystone-TLM version must be 0 or 1")
            }
        case 0x30:
            let tx = try r.i8("Eddystone-EID TX power")
            let eid = try r.u64("Eddystone-EID identifier").byteSwapped
            try r.expectEnd("bytes after the Eddystone-EID frame")
            self = .eid(EddystoneEID(txPower: tx, eid: eid))
        default:
            self = .unknown(frameType: frameType, r.rest())
        }
    }
}

extension ADServiceData {
    /// The Eddystone frame when this is service data for 0xFEAA, else nil; a malformed
    /// Eddystone frame throws.
    @inlinable
    public func eddystone() throws(WireError) -> EddystoneFrame? {
        guard uuid.uuid16 == EddystoneFrame.serviceUUID else { return nil }
        return try EddystoneFrame(parsing: payload, baseOffset: payloadOffset)
    }
}
