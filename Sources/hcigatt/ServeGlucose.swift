import BluetoothGATT
import BluetoothLE
import BluetoothProfiles
import BluetoothWire

extension ServeProfile {
    // MARK: Glucose (0x1808)

    /// `serve --profile glucose`: a glucose meter's stored readings behind the Record Access
    /// Control Point (Glucose Service 1.0.1; the library's ``StoredRecords``): Glucose
    /// Measurement (2A18) and its Context (2A34) notified only in answer to a request,
    /// Glucose Feature (2A51), RACP (2A52). The service needs an encrypted link, as meters
    /// do (the Glucose Profile requires bonding). Twelve readings four hours apart to start
    /// with, every third with a meal context; a new one every minute while serving (at most
    /// a thousand kept, the oldest dropped).
    static var glucose: ServeProfile {
        let store = StoredRecords(service: GlucoseReadings.service, recordCharacteristic: GlucoseReadings.measurement)
        var readings = GlucoseReadings()
        for back in stride(from: 11, through: 0, by: -1) { store.append(readings.next(taken: dateTime(secondsAgo: back * 4 * 3600))) }
        let next = Locked(readings)
        // Glucose Feature: low battery, sensor malfunction, strip insertion error and general
        // device fault detection; multiple bonds.
        let features: UInt16 = 1 << 0 | 1 << 1 | 1 << 3 | 1 << 8 | 1 << 10
        let service = GATTLocalService(uuid: GlucoseReadings.service, characteristics: [
            GATTLocalCharacteristic(uuid: GlucoseReadings.measurement, properties: .notify),
            GATTLocalCharacteristic(uuid: GlucoseReadings.context, properties: .notify),
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A51), properties: .read,
                                    value: .stored([UInt8(features & 0xFF), UInt8(features >> 8)])),
            GATTLocalCharacteristic(uuid: RecordAccessControlPoint.uuid, properties: [.write, .indicate], maximumLength: 20,
                                    onWrite: store.writeHandler),
        ]).requiring(.encryption)
        return ServeProfile(
            name: "glucose",
            summary: "Glucose meter: stored readings (2A18, 2A34 contexts) reported, counted and deleted through the Record Access Control Point (2A52); encrypted link",
            services: [service], advertised: [GlucoseReadings.service],
            run: { ctx in
                guard store.attach(to: ctx.server) else {
                    ctx.out.note("glucose: the record service is not in the database")
                    return
                }
                let log = Task { await logRecordEvents(store, "glucose", ctx) }
                while await pause(.seconds(60)) {
                    store.append(next.withLock { $0.next(taken: nowDateTime()) })
                }
                log.cancel()
            },
            onEvent: { event, ctx in store.handle(event, on: ctx.server) })
    }
}

/// The readings `serve --profile glucose` makes up: 4.6 to 7.8 mmol/L, capillary plasma from
/// a finger, every third with a meal and carbohydrate context.
struct GlucoseReadings: Sendable {
    static let service = BluetoothUUID(0x1808)
    static let measurement = BluetoothUUID(0x2A18), context = BluetoothUUID(0x2A34)
    var sequenceNumber: UInt16 = 1

    /// The next reading, taken at `time` (its Base Time; no Time Offset: the meter's clock
    /// was not changed since).
    mutating func next(taken time: DateTime) -> StoredRecords.Record {
        let n = sequenceNumber
        sequenceNumber &+= 1
        let tenths = 46 + Int(n) * 37 % 33
        let withContext = n % 3 == 0
        var values: [StoredRecords.Value] = []
        if let concentration = try? SFloat(mantissa: tenths, exponent: -4) {
            values.append(StoredRecords.Value(Self.measurement, encoded(GlucoseMeasurement(
                sequenceNumber: n, baseTime: time, concentration: concentration, unit: .molPerLiter,
                typeAndLocation: GlucoseTypeSampleLocation(type: .capillaryPlasma, location: .finger),
                contextFollows: withContext))))
        }
        if withContext, let carbs = try? SFloat(mantissa: 45 + Int(n % 4) * 10, exponent: -3) {
            values.append(StoredRecords.Value(Self.context, encoded(GlucoseMeasurementContext(
                sequenceNumber: n, carbohydrate: .init(id: n % 2 == 0 ? .lunch : .breakfast, amount: carbs),
                meal: n % 2 == 0 ? .postprandial : .preprandial))))
        }
        return StoredRecords.Record(sequenceNumber: n, values: values)
    }
}
