// Ruuvi RAWv2 (data format 5): Manufacturer Specific Data of Ruuvi Innovations (0x0499).
// Layout and "not available" values from Ruuvi's data format 5 documentation; multi-byte
// fields are big-endian, unlike Bluetooth's own.
import BluetoothWire

/// A Ruuvi RAWv2 (data format 5) broadcast: 24 bytes after the company identifier.
///
/// Each reading is optional: the sensor sends a reserved "not available" value for what it
/// cannot measure (0x8000 for signed fields, all ones for unsigned ones), kept as nil.
public struct RuuviRAWv2: Hashable, Sendable {
    /// Ruuvi Innovations Ltd.'s company identifier.
    public static let companyID: UInt16 = 0x0499
    /// The first payload byte of this format.
    public static let dataFormat: UInt8 = 5
    /// The payload length after the company identifier.
    public static let length = 24

    /// Temperature in 0.005 °C steps.
    public var rawTemperature: Int16?
    /// Relative humidity in 0.0025 % steps (values above 100 % are sent as measured).
    public var rawHumidity: UInt16?
    /// Atmospheric pressure in Pa, less 50 000.
    public var rawPressure: UInt16?
    /// Acceleration on X, Y, Z in milli-g.
    public var accelerationX: Int16?, accelerationY: Int16?, accelerationZ: Int16?
    /// Battery voltage in mV above 1600.
    public var rawBatteryVoltage: UInt16?
    /// Transmit power in 2 dBm steps above -40 dBm.
    public var rawTXPower: UInt8?
    /// Movements the accelerometer counted (wraps at 254).
    public var movementCounter: UInt8?
    /// Measurement sequence number (wraps at 65534): tells a repeat from a new measurement.
    public var measurementSequence: UInt16?
    /// The address the tag reports for itself.
    public var address: BluetoothAddress?

    /// Parses the manufacturer data payload after the company identifier. `baseOffset`
    /// places errors.
    public init(parsing payload: UnsafeRawBufferPointer, baseOffset: Int = 0) throws(WireError) {
        var r = ByteReader(payload, baseOffset: baseOffset)
        guard try r.u8("Ruuvi data format") == Self.dataFormat else {
            throw WireError(.invalidValue, at: baseOffset, "not Ruuvi data format 5")
        }
        func be16(_ r: inout ByteReader, _ field: StaticString) throws(WireError) -> UInt16 {
            let hi = try r.u8(field), lo = try r.u8(field)
            return UInt16(hi) << 8 | UInt16(lo)
        }
        func signed(_ raw: UInt16) -> Int16? { raw == 0x8000 ? nil : Int16(bitPattern: raw) }
        func unsigned(_ raw: UInt16) -> UInt16? { raw == 0xFFFF ? nil : raw }
        rawTemperature = signed(try be16(&r, "Ruuvi temperature"))
        rawHumidity = unsigned(try be16(&r, "Ruuvi humidity"))
        rawPressure = unsigned(try be16(&r, "Ruuvi pressure"))
        accelerationX = signed(try be16(&r, "Ruuvi acceleration X"))
        accelerationY = signed(try be16(&r, "Ruuvi acceleration Y"))
        accelerationZ = signed(try be16(&r, "Ruuvi acceleration Z"))
        let power = try be16(&r, "Ruuvi power info")
        rawBatteryVoltage = power >> 5 == 0x7FF ? nil : power >> 5
        rawTXPower = power & 0x1F == 0x1F ? nil : UInt8(power & 0x1F)
        let movement = try r.u8("Ruuvi movement counter")
        movementCounter = movement == 0xFF ? nil : movement
        measurementSequence = unsigned(try be16(&r, "Ruuvi measurement sequence"))
        let mac = try r.bytes(6, "Ruuvi MAC address")
        let a = BluetoothAddress(displayOrder: mac)
        address = a.rawValue == 0xFFFF_FFFF_FFFF ? nil : a
        try r.expectEnd("bytes after the Ruuvi RAWv2 payload")
    }

    /// °C.
    public var temperature: Double? { rawTemperature.map { Double($0) / 200 } }
    /// %RH.
    public var humidity: Double? { rawHumidity.map { Double($0) / 400 } }
    /// hPa (the unit weather stations and Home Assistant use).
    public var pressure: Double? { rawPressure.map { (Double($0) + 50_000) / 100 } }
    /// V.
    public var batteryVoltage: Double? { rawBatteryVoltage.map { (Double($0) + 1600) / 1000 } }
    /// dBm.
    public var txPower: Int? { rawTXPower.map { -40 + 2 * Int($0) } }
}

extension BluetoothAddress {
    /// An address from 6 bytes in display order (most significant first), as broadcast
    /// formats outside the Bluetooth specification write them.
    init(displayOrder bytes: UnsafeRawBufferPointer) {
        var v: UInt64 = 0
        for b in bytes.prefix(6) { v = v << 8 | UInt64(b) }
        self.init(rawValue: v)
    }
}
