import BluetoothGATT
import BluetoothLE
import BluetoothProfiles
import BluetoothWire

extension ServeProfile {
    // MARK: Continuous Glucose Monitoring (0x181F)

    /// `serve --profile cgm`: a CGM two hours into its session (CGMS 1.0): a record every five
    /// minutes so far (24), one more a minute while serving (at most a thousand kept), each
    /// placed by its Time Offset, behind the Record Access Control Point (every operator on
    /// the time offset; 0xFE busy, 0xFD not subscribed: ``RACPServerRules/cgm``); CGM Feature
    /// (trend and quality supported, no E2E-CRC), Status, Session Start Time (UTC), Session
    /// Run Time, and the Specific Ops Control Point answering Start and Stop Session.
    static var cgm: ServeProfile {
        let sessionMinutes = 120
        let startSeconds = Int(nowDateTime().secondsSince1970 ?? 0) - sessionMinutes * 60
        let start = DateTime(secondsSince1970: Int64(startSeconds)) ?? nowDateTime()
        let store = StoredRecords(service: CGMReadings.service, recordCharacteristic: CGMReadings.measurement, rules: .cgm)
        for minute in stride(from: 5, through: sessionMinutes, by: 5) { store.append(CGMReadings.record(at: UInt16(minute))) }
        // CGM Feature: sensor malfunction (7), low battery (9), general device fault (11),
        // multiple bonds (13), trend (15), quality (16); type capillary whole blood (1) at
        // subcutaneous tissue (5); E2E-CRC not supported (0xFFFF).
        let features: UInt32 = 1 << 7 | 1 << 9 | 1 << 11 | 1 << 13 | 1 << 15 | 1 << 16
        let featureValue: [UInt8] = [UInt8(features & 0xFF), UInt8(features >> 8 & 0xFF), UInt8(features >> 16), 0x51, 0xFF, 0xFF]
        let service = GATTLocalService(uuid: CGMReadings.service, characteristics: [
            GATTLocalCharacteristic(uuid: CGMReadings.measurement, properties: .notify),
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2AA8), properties: .read, value: .stored(featureValue)),
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2AA9), properties: .read, value: .computed { _ in
                let offset = UInt16(clamping: (Int(nowDateTime().secondsSince1970 ?? 0) - startSeconds) / 60)
                return .success([UInt8(offset & 0xFF), UInt8(offset >> 8), 0, 0, 0])
            }),
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2AAA), properties: .read,
                                    value: .stored(encoded(CGMSessionStartTime(start: start, timeZone: 0, dstOffset: 0)))),
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2AAB), properties: .read, value: .stored([24 * 14, 0x01].map { UInt8(truncatingIfNeeded: $0) })),
            GATTLocalCharacteristic(uuid: RecordAccessControlPoint.uuid, properties: [.write, .indicate], maximumLength: 20,
                                    onWrite: store.writeHandler),
            GATTLocalCharacteristic(uuid: CGMReadings.specificOps, properties: [.write, .indicate], maximumLength: 20),
        ]).requiring(.encryption)
        return ServeProfile(
            name: "cgm",
            summary: "Continuous glucose monitor: a session's records (2AA7, by time offset) reported, counted and deleted through the Record Access Control Point (2A52); 2AAA session start; encrypted link",
            services: [service], advertised: [CGMReadings.service],
            run: { ctx in
                guard store.attach(to: ctx.server) else {
                    ctx.out.note("cgm: the record service is not in the database")
                    return
                }
                let log = Task { await logRecordEvents(store, "cgm", ctx) }
                var minute = sessionMinutes
                while await pause(.seconds(60)) {
                    minute += 1
                    store.append(CGMReadings.record(at: UInt16(clamping: minute)))
                }
                log.cancel()
            },
            onEvent: { event, ctx in
                store.handle(event, on: ctx.server)
                // Specific Ops Control Point (CGMS §3.7): Start Session (0x1A) and Stop Session
                // (0x1B) answered Success, any other op code Op Code Not Supported, each with a
                // Response Code (0x1C) indication.
                if case .wrote(let c, let handle, let value, _) = event, handle == ctx.server.valueHandle(of: CGMReadings.specificOps),
                   let op = value.first {
                    let code: UInt8 = op == 0x1A || op == 0x1B ? 0x01 : 0x02
                    let server = ctx.server
                    Task { try? await server.indicate(handle, value: [0x1C, op, code], to: c.id, store: false) }
                }
            })
    }
}

/// The records `serve --profile cgm` makes up: 90 to 160 mg/dL in a slow wave, trend and
/// quality with each.
enum CGMReadings {
    static let service = BluetoothUUID(0x181F)
    static let measurement = BluetoothUUID(0x2AA7)
    static let specificOps = BluetoothUUID(0x2AAC)

    /// The record `minute` minutes into the session (its Time Offset is its number in the store).
    static func record(at minute: UInt16) -> StoredRecords.Record {
        let wave = [0, 8, 15, 20, 22, 20, 15, 8, 0, -8, -15, -20]
        let step = Int(minute) / 5
        let mgdl = 120 + wave[step % wave.count] + Int(minute) % 5
        let trend = wave[(step + 1) % wave.count] - wave[step % wave.count]
        var values: [StoredRecords.Value] = []
        if let c = try? SFloat(mantissa: mgdl, exponent: 0), let t = try? SFloat(mantissa: trend * 2, exponent: -1),
           let q = try? SFloat(mantissa: 95, exponent: 0) {
            values.append(StoredRecords.Value(measurement, encoded(CGMMeasurement(concentration: c, timeOffset: minute, trend: t, quality: q))))
        }
        return StoredRecords.Record(sequenceNumber: minute, values: values)
    }
}
