// One entry point from a characteristic UUID and its value bytes to a decoded value, for the
// CLI (`hcigatt decode char`), the health scenarios and the monitor.
import BluetoothWire

/// A decoded characteristic value: one case per characteristic this module knows.
///
/// Cases holding views (`UTF8Value`, `HeartRateMeasurement`, `RecordAccessControlPoint`,
/// `RegulatoryCertificationData`) borrow the parsed buffer and are valid only while it is
/// alive. `fieldTitle` is the characteristic's name; `fields` carry values with units;
/// `summary` is one human line. Re-encoding (`WireEncodable`) gives back the parsed bytes.
public enum DecodedCharacteristic: FieldDescribable, WireEncodable {
    case temperatureMeasurement(TemperatureMeasurement)
    case intermediateTemperature(TemperatureMeasurement)
    case temperatureType(TemperatureType)
    case measurementInterval(MeasurementInterval)
    case validRange(ValidRange)
    case bloodPressureMeasurement(BloodPressureMeasurement)
    case intermediateCuffPressure(IntermediateCuffPressure)
    case bloodPressureFeature(BloodPressureFeature)
    case heartRateMeasurement(HeartRateMeasurement)
    case bodySensorLocation(BodySensorLocation)
    case batteryLevel(BatteryLevel)
    /// Device Name 0x2A00 and the Device Information strings 0x2A24...0x2A29 (the UUID says which).
    case text(uuid: UInt16, UTF8Value)
    case systemID(SystemID)
    case regulatoryCertification(RegulatoryCertificationData)
    case pnpID(PnPID)
    case appearance(AppearanceCharacteristic)
    case dateTime(DateTime)
    case currentTime(CurrentTime)
    case glucoseMeasurement(GlucoseMeasurement)
    case glucoseMeasurementContext(GlucoseMeasurementContext)
    case recordAccessControlPoint(RecordAccessControlPoint)
    case weightMeasurement(WeightMeasurement)
    case plxSpotCheck(PLXSpotCheckMeasurement)
    /// CGM Measurement: one or more records (a view over the value).
    case cgmMeasurement(CGMMeasurementRecords)
    case cgmSessionStartTime(CGMSessionStartTime)
    case plxContinuous(PLXContinuousMeasurement)
    case cscMeasurement(CSCMeasurement)
    case rscMeasurement(RSCMeasurement)
    case environmentalTemperature(EnvironmentalTemperature)
    case humidity(Humidity)
    case pressure(Pressure)
    case sensorTagKeys(SensorTagKeys)

    /// The characteristic (or descriptor) UUID this value was decoded for.
    public var uuid: BluetoothUUID {
        switch self {
        case .temperatureMeasurement: BluetoothUUID(0x2A1C)
        case .intermediateTemperature: BluetoothUUID(0x2A1E)
        case .temperatureType: BluetoothUUID(0x2A1D)
        case .measurementInterval: BluetoothUUID(0x2A21)
        case .validRange: BluetoothUUID(0x2906)
        case .bloodPressureMeasurement: BluetoothUUID(0x2A35)
        case .intermediateCuffPressure: BluetoothUUID(0x2A36)
        case .bloodPressureFeature: BluetoothUUID(0x2A49)
        case .heartRateMeasurement: BluetoothUUID(0x2A37)
        case .bodySensorLocation: BluetoothUUID(0x2A38)
        case .batteryLevel: BluetoothUUID(0x2A19)
        case .text(let u, _): BluetoothUUID(u)
        case .systemID: BluetoothUUID(0x2A23)
        case .regulatoryCertification: BluetoothUUID(0x2A2A)
        case .pnpID: BluetoothUUID(0x2A50)
        case .appearance: BluetoothUUID(0x2A01)
        case .dateTime: BluetoothUUID(0x2A08)
        case .currentTime: BluetoothUUID(0x2A2B)
        case .glucoseMeasurement: BluetoothUUID(0x2A18)
        case .glucoseMeasurementContext: BluetoothUUID(0x2A34)
        case .recordAccessControlPoint: BluetoothUUID(0x2A52)
        case .weightMeasurement: BluetoothUUID(0x2A9D)
        case .plxSpotCheck: BluetoothUUID(0x2A5E)
        case .cgmMeasurement: BluetoothUUID(0x2AA7)
        case .cgmSessionStartTime: BluetoothUUID(0x2AAA)
        case .plxContinuous: BluetoothUUID(0x2A5F)
        case .cscMeasurement: BluetoothUUID(0x2A5B)
        case .rscMeasurement: BluetoothUUID(0x2A53)
        case .environmentalTemperature: BluetoothUUID(0x2A6E)
        case .humidity: BluetoothUUID(0x2A6F)
        case .pressure: BluetoothUUID(0x2A6D)
        case .sensorTagKeys: BluetoothUUID(0xFFE1)
        }
    }

    public var fieldTitle: String {
        switch self {
        case .temperatureMeasurement: "Temperature Measurement"
        case .intermediateTemperature: "Intermediate Temperature"
        case .temperatureType: "Temperature Type"
        case .measurementInterval: "Measurement Interval"
        case .validRange: "Valid Range"
        case .bloodPressureMeasurement: "Blood Pressure Measurement"
        case .intermediateCuffPressure: "Intermediate Cuff Pressure"
        case .bloodPressureFeature: "Blood Pressure Feature"
        case .heartRateMeasurement: "Heart Rate Measurement"
        case .bodySensorLocation: "Body Sensor Location"
        case .batteryLevel: "Battery Level"
        case .text(let u, _): CharacteristicDecoder.textTitle(u)
        case .systemID: "System ID"
        case .regulatoryCertification: "IEEE 11073-20601 Regulatory Certification Data List"
        case .pnpID: "PnP ID"
        case .appearance: "Appearance"
        case .dateTime: "Date Time"
        case .currentTime: "Current Time"
        case .glucoseMeasurement: "Glucose Measurement"
        case .glucoseMeasurementContext: "Glucose Measurement Context"
        case .recordAccessControlPoint: "Record Access Control Point"
        case .weightMeasurement: "Weight Measurement"
        case .plxSpotCheck: "PLX Spot-Check Measurement"
        case .cgmMeasurement: "CGM Measurement"
        case .cgmSessionStartTime: "CGM Session Start Time"
        case .plxContinuous: "PLX Continuous Measurement"
        case .cscMeasurement: "CSC Measurement"
        case .rscMeasurement: "RSC Measurement"
        case .environmentalTemperature: "Temperature"
        case .humidity: "Humidity"
        case .pressure: "Pressure"
        case .sensorTagKeys: "SensorTag Key Press"
        }
    }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        switch self {
        case .temperatureMeasurement(let v), .intermediateTemperature(let v): return v.fields(title: fieldTitle)
        case .temperatureType(let v): return [Field("temperature_type", v.fieldValue)]
        case .measurementInterval(let v):
            return [Field("measurement_interval", v.seconds == 0 ? .named(0, "no periodic measurement") : .uint(UInt64(v.seconds))),
                    Field("unit", .text("s"))]
        case .validRange(let v):
            return [Field("lower", .uint(UInt64(v.lower))), Field("upper", .uint(UInt64(v.upper)))]
                + (v.isEmpty ? [Field("empty", .bool(true))] : [])
        case .bloodPressureMeasurement(let v): return v.fields
        case .intermediateCuffPressure(let v): return v.fields
        case .bloodPressureFeature(let v): return [Field("features", v.fieldValue)]
        case .heartRateMeasurement(let v): return v.fields
        case .bodySensorLocation(let v): return [Field("body_sensor_location", .named(UInt64(v.rawValue), v.name))]
        case .batteryLevel(let v): return [Field("battery_level", .uint(UInt64(v.percent))), Field("unit", .text("%"))]
        case .text(let u, let v): return v.fields(CharacteristicDecoder.textField(u))
        case .systemID(let v): return v.fields
        case .regulatoryCertification(let v): return [Field("data", .bytes(v.bytes))]
        case .pnpID(let v): return v.fields
        case .appearance(let v): return v.fields
        case .dateTime(let v): return v.fields
        case .currentTime(let v): return v.fields
        case .glucoseMeasurement(let v): return v.fields
        case .glucoseMeasurementContext(let v): return v.fields
        case .recordAccessControlPoint(let v): return v.fields
        case .weightMeasurement(let v): return v.fields
        case .plxSpotCheck(let v): return v.fields
        case .cgmMeasurement(let v): return v.fields
        case .cgmSessionStartTime(let v): return v.fields
        case .plxContinuous(let v): return v.fields
        case .cscMeasurement(let v): return v.fields
        case .rscMeasurement(let v): return v.fields
        case .environmentalTemperature(let v):
            return [Field("temperature", v.celsius.map { .double($0) } ?? .named(0x8000, "unknown")), Field("unit", .text("°C"))]
        case .humidity(let v):
            return [Field("humidity", v.percent.map { .double($0) } ?? .named(0xFFFF, "unknown")), Field("unit", .text("%"))]
        case .pressure(let v): return [Field("pressure", .double(v.pascals)), Field("unit", .text("Pa"))]
        case .sensorTagKeys(let v):
            var f = [Field("keys", .named(UInt64(v.rawValue & 3), v.name)),
                     Field("right", .bool(v.rightPressed)), Field("left", .bool(v.leftPressed))]
            if v.otherBits != 0 { f.append(Field("other_bits", .uint(UInt64(v.otherBits)))) }
            return f
        }
    }

    /// One human line, e.g. "36.4 °C, mouth, 2026-11-29 17:33:05".
    public var summary: String {
        switch self {
        case .temperatureMeasurement(let v), .intermediateTemperature(let v): v.summary
        case .temperatureType(let v): v.name
        case .measurementInterval(let v): v.summary
        case .validRange(let v): v.summary
        case .bloodPressureMeasurement(let v): v.summary
        case .intermediateCuffPressure(let v): v.summary
        case .bloodPressureFeature(let v): v.summary
        case .heartRateMeasurement(let v): v.summary
        case .bodySensorLocation(let v): v.name
        case .batteryLevel(let v): "\(v.percent) %"
        case .text(_, let v): v.text
        case .systemID(let v): v.summary
        case .regulatoryCertification(let v): Hex.string(v.bytes, separator: " ")
        case .pnpID(let v): v.summary
        case .appearance(let v): v.summary
        case .dateTime(let v): v.description
        case .currentTime(let v): v.summary
        case .glucoseMeasurement(let v): v.summary
        case .glucoseMeasurementContext(let v): v.summary
        case .recordAccessControlPoint(let v): v.summary
        case .weightMeasurement(let v): v.summary
        case .plxSpotCheck(let v): v.summary
        case .cgmMeasurement(let v): v.summary
        case .cgmSessionStartTime(let v): v.summary
        case .plxContinuous(let v): v.summary
        case .cscMeasurement(let v): v.summary
        case .rscMeasurement(let v): v.summary
        case .environmentalTemperature(let v): v.summary
        case .humidity(let v): v.summary
        case .pressure(let v): v.summary
        case .sensorTagKeys(let v): v.summary
        }
    }

    var encodable: any WireEncodable {
        switch self {
        case .temperatureMeasurement(let v), .intermediateTemperature(let v): v
        case .temperatureType(let v): v
        case .measurementInterval(let v): v
        case .validRange(let v): v
        case .bloodPressureMeasurement(let v): v
        case .intermediateCuffPressure(let v): v
        case .bloodPressureFeature(let v): v
        case .heartRateMeasurement(let v): v
        case .bodySensorLocation(let v): v
        case .batteryLevel(let v): v
        case .text(_, let v): v
        case .systemID(let v): v
        case .regulatoryCertification(let v): v
        case .pnpID(let v): v
        case .appearance(let v): v
        case .dateTime(let v): v
        case .currentTime(let v): v
        case .glucoseMeasurement(let v): v
        case .glucoseMeasurementContext(let v): v
        case .recordAccessControlPoint(let v): v
        case .weightMeasurement(let v): v
        case .plxSpotCheck(let v): v
        case .cgmMeasurement(let v): v
        case .cgmSessionStartTime(let v): v
        case .plxContinuous(let v): v
        case .cscMeasurement(let v): v
        case .rscMeasurement(let v): v
        case .environmentalTemperature(let v): v
        case .humidity(let v): v
        case .pressure(let v): v
        case .sensorTagKeys(let v): v
        }
    }

    /// Re-encoding (not the hot path): the bytes the value was parsed from.
    public var encodedLength: Int { encodable.encodedLength }
    public func encode(into writer: inout ByteWriter) throws(WireError) { try encodable.encode(into: &writer) }
}

/// Picks the decoder for a characteristic UUID.
public enum CharacteristicDecoder {
    /// Every UUID `decode` knows (16-bit; 0x2906 is the Valid Range descriptor, 0xFFE1 the
    /// SensorTag key characteristic).
    public static let supportedUUIDs: [UInt16] = [
        0x2A1C, 0x2A1E, 0x2A1D, 0x2A21, 0x2906, 0x2A35, 0x2A36, 0x2A49, 0x2A37, 0x2A38, 0x2A19,
        0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2A23, 0x2A2A, 0x2A50, 0x2A01,
        0x2A08, 0x2A2B, 0x2A18, 0x2A34, 0x2A52, 0x2A9D, 0x2A5E, 0x2A5F, 0x2A5B, 0x2A53, 0x2A6E,
        0x2A6F, 0x2A6D, 0x2AA7, 0x2AAA, 0xFFE1,
    ]

    /// Whether `decode` has a decoder for `uuid`.
    public static func hasDecoder(uuid: BluetoothUUID) -> Bool {
        guard let u = uuid.uuid16 else { return false }
        return supportedUUIDs.contains(u)
    }

    /// Decodes `value` as the characteristic `uuid`; nil when there is no decoder for that
    /// UUID, a `WireError` (offset + reason) when the value is malformed. Allocation-free; the
    /// result may borrow `value` (see ``DecodedCharacteristic``).
    @inlinable
    public static func decode(uuid: BluetoothUUID, value: UnsafeRawBufferPointer) throws(WireError) -> DecodedCharacteristic? {
        guard let u = uuid.uuid16 else { return nil }
        switch u {
        case 0x2A1C: return .temperatureMeasurement(try TemperatureMeasurement(parsing: value))
        case 0x2A1E: return .intermediateTemperature(try TemperatureMeasurement(parsing: value))
        case 0x2A1D: return .temperatureType(try TemperatureType(parsing: value))
        case 0x2A21: return .measurementInterval(try MeasurementInterval(parsing: value))
        case 0x2906: return .validRange(try ValidRange(parsing: value))
        case 0x2A35: return .bloodPressureMeasurement(try BloodPressureMeasurement(parsing: value))
        case 0x2A36: return .intermediateCuffPressure(try IntermediateCuffPressure(parsing: value))
        case 0x2A49: return .bloodPressureFeature(try BloodPressureFeature(parsing: value))
        case 0x2A37: return .heartRateMeasurement(try HeartRateMeasurement(parsing: value))
        case 0x2A38: return .bodySensorLocation(try BodySensorLocation(parsing: value))
        case 0x2A19: return .batteryLevel(try BatteryLevel(parsing: value))
        case 0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29: return .text(uuid: u, UTF8Value(parsing: value))
        case 0x2A23: return .systemID(try SystemID(parsing: value))
        case 0x2A2A: return .regulatoryCertification(RegulatoryCertificationData(parsing: value))
        case 0x2A50: return .pnpID(try PnPID(parsing: value))
        case 0x2A01: return .appearance(try AppearanceCharacteristic(parsing: value))
        case 0x2A08: return .dateTime(try DateTime(wire: value))
        case 0x2A2B: return .currentTime(try CurrentTime(parsing: value))
        case 0x2A18: return .glucoseMeasurement(try GlucoseMeasurement(parsing: value))
        case 0x2A34: return .glucoseMeasurementContext(try GlucoseMeasurementContext(parsing: value))
        case 0x2A52: return .recordAccessControlPoint(try RecordAccessControlPoint(parsing: value))
        case 0x2A9D: return .weightMeasurement(try WeightMeasurement(parsing: value))
        case 0x2A5E: return .plxSpotCheck(try PLXSpotCheckMeasurement(parsing: value))
        case 0x2AA7: return .cgmMeasurement(try CGMMeasurementRecords(parsing: value))
        case 0x2AAA: return .cgmSessionStartTime(try CGMSessionStartTime(parsing: value))
        case 0x2A5F: return .plxContinuous(try PLXContinuousMeasurement(parsing: value))
        case 0x2A5B: return .cscMeasurement(try CSCMeasurement(parsing: value))
        case 0x2A53: return .rscMeasurement(try RSCMeasurement(parsing: value))
        case 0x2A6E: return .environmentalTemperature(try EnvironmentalTemperature(parsing: value))
        case 0x2A6F: return .humidity(try Humidity(parsing: value))
        case 0x2A6D: return .pressure(try Pressure(parsing: value))
        case 0xFFE1: return .sensorTagKeys(try SensorTagKeys(parsing: value))
        default: return nil
        }
    }

    static func textTitle(_ u: UInt16) -> String {
        switch u {
        case 0x2A00: "Device Name"
        case 0x2A24: "Model Number String"
        case 0x2A25: "Serial Number String"
        case 0x2A26: "Firmware Revision String"
        case 0x2A27: "Hardware Revision String"
        case 0x2A28: "Software Revision String"
        case 0x2A29: "Manufacturer Name String"
        default: AssignedNumbers.characteristicName(BluetoothUUID(u)) ?? "String"
        }
    }

    static func textField(_ u: UInt16) -> String {
        switch u {
        case 0x2A00: "device_name"
        case 0x2A24: "model_number"
        case 0x2A25: "serial_number"
        case 0x2A26: "firmware_revision"
        case 0x2A27: "hardware_revision"
        case 0x2A28: "software_revision"
        case 0x2A29: "manufacturer_name"
        default: "text"
        }
    }
}
