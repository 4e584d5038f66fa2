// The custom firmware of the Xiaomi LYWSD03MMC and similar thermometers (pvvx and ATC1441)
// broadcasts Service Data for the Environmental Sensing service UUID 0x181A in one of two
// unencrypted layouts, told apart by their length.
import BluetoothWire

/// A pvvx or ATC1441 thermometer broadcast (Service Data, UUID 0x181A).
public struct ThermometerATC: Hashable, Sendable {
    /// The Service Data UUID both formats use (Environmental Sensing).
    public static let serviceUUID: UInt16 = 0x181A

    /// Which firmware's layout.
    public enum Format: Hashable, Sendable {
        /// pvvx "custom": 15 bytes (14 without the flags byte), little-endian, 0.01 °C / 0.01 % resolution, flags.
        case pvvx
        /// ATC1441: 13 bytes, big-endian, 0.1 °C / 1 % resolution.
        case atc1441

        /// "pvvx", "atc1441".
        public var name: StaticString {
            switch self {
            case .pvvx: "pvvx"
            case .atc1441: "atc1441"
            }
        }
    }

    /// Which layout the frame had.
    public var format: Format
    /// The address the device reports for itself.
    public var address: BluetoothAddress
    /// Temperature in 0.01 °C (ATC1441's 0.1 °C scaled up).
    public var rawTemperature: Int32
    /// Relative humidity in 0.01 % (ATC1441's whole percent scaled up).
    public var rawHumidity: UInt32
    /// Battery voltage in mV.
    public var batteryVoltage: UInt16
    /// Battery level in %.
    public var batteryLevel: UInt8
    /// Counts measurements (pvvx) or frames (ATC1441): a repeat has the same number.
    public var counter: UInt8
    /// pvvx only: bit 0 reed switch / GPIO pin, bit 1 trigger output, bits 2-4 control
    /// flags (see pvvx's documentation).
    public var flags: UInt8?

    /// Parses the Service Data payload after the UUID. The encrypted variants (8 and 11
    /// bytes long) are refused: hcigatt does not decrypt them (BTHome is the encrypted
    /// format it reads, and pvvx firmware can send that instead).
    public init(parsing payload: UnsafeRawBufferPointer, baseOffset: Int = 0) throws(WireError) {
        var r = ByteReader(payload, baseOffset: baseOffset)
        switch payload.count {
        case 14, 15:
            format = .pvvx
            // Least significant byte first, as Bluetooth sends addresses.
            address = try BluetoothAddress.read(&r)
            rawTemperature = Int32(Int16(bitPattern: try r.u16("pvvx temperature")))
            rawHumidity = UInt32(try r.u16("pvvx humidity"))
            batteryVoltage = try r.u16("pvvx battery voltage")
            batteryLevel = try r.u8("pvvx battery level")
            counter = try r.u8("pvvx measurement count")
            // Firmware built without triggers leaves the flags byte out.
            flags = r.isAtEnd ? nil : try r.u8("pvvx flags")
        case 13:
            format = .atc1441
            let mac = try r.bytes(6, "ATC1441 MAC address")
            address = BluetoothAddress(displayOrder: mac)
            let hi = try r.u8("ATC1441 temperature"), lo = try r.u8("ATC1441 temperature")
            rawTemperature = Int32(Int16(bitPattern: UInt16(hi) << 8 | UInt16(lo))) * 10
            rawHumidity = UInt32(try r.u8("ATC1441 humidity")) * 100
            batteryLevel = try r.u8("ATC1441 battery level")
            let vhi = try r.u8("ATC1441 battery voltage"), vlo = try r.u8("ATC1441 battery voltage")
            batteryVoltage = UInt16(vhi) << 8 | UInt16(vlo)
            counter = try r.u8("ATC1441 frame count")
            flags = nil
        default:
            throw WireError(.invalidLength, at: baseOffset,
                            "not a pvvx (14 or 15 bytes) or ATC1441 (13 bytes) thermometer frame (encrypted frames are not decoded)")
        }
    }

    /// °C.
    public var temperature: Double { Double(rawTemperature) / 100 }
    /// %RH.
    public var humidity: Double { Double(rawHumidity) / 100 }
}
