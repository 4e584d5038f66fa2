import BluetoothGATT
import BluetoothLE
import BluetoothProfiles
import BluetoothWire

extension ServeProfile {
    // MARK: Pulse Oximeter (0x1822)

    /// `serve --profile plx`: a spot-check oximeter (Pulse Oximeter Service 1.0): its stored
    /// spot-checks (2A5E) behind the Record Access Control Point, which takes the All Records
    /// operator only (the records have no sequence number) and answers a second request with
    /// 0xFE, an unsubscribed client with 0xFD (``RACPServerRules/pulseOximeter``); the live
    /// reading on PLX Continuous Measurement (2A5F) every second; PLX Features (2A60).
    /// Eight spot-checks half an hour apart to start with, a new one every minute while
    /// serving (at most 200 kept, the oldest dropped).
    static var pulseOximeter: ServeProfile {
        let store = StoredRecords(service: PulseOximeterReadings.service, recordCharacteristic: PulseOximeterReadings.spotCheck,
                                  rules: .pulseOximeter, capacity: 200)
        var readings = PulseOximeterReadings()
        for back in stride(from: 7, through: 0, by: -1) { store.append(readings.next(taken: dateTime(secondsAgo: back * 1800))) }
        let next = Locked(readings)
        // PLX Features: Supported Features = spot-check storage (bit 2), spot-check timestamp
        // (bit 3), multiple bonds (bit 7); no status fields, so nothing follows.
        let features: [UInt8] = [0x8C, 0x00]
        let service = GATTLocalService(uuid: PulseOximeterReadings.service, characteristics: [
            GATTLocalCharacteristic(uuid: PulseOximeterReadings.spotCheck, properties: .indicate),
            GATTLocalCharacteristic(uuid: PulseOximeterReadings.continuous, properties: .notify),
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A60), properties: .read, value: .stored(features)),
            GATTLocalCharacteristic(uuid: RecordAccessControlPoint.uuid, properties: [.write, .indicate], maximumLength: 20,
                                    onWrite: store.writeHandler),
        ])
        return ServeProfile(
            name: "plx",
            summary: "Pulse oximeter: stored spot-checks (2A5E) reported, counted and deleted through the Record Access Control Point (2A52, all records only); 2A5F continuous readings every second",
            services: [service], advertised: [PulseOximeterReadings.service],
            run: { ctx in
                guard store.attach(to: ctx.server), let live = ctx.server.valueHandle(of: PulseOximeterReadings.continuous) else {
                    ctx.out.note("plx: the record service is not in the database")
                    return
                }
                let log = Task { await logRecordEvents(store, "plx", ctx) }
                var second = 0
                while await pause(.seconds(1)) {
                    second += 1
                    if let reading = PulseOximeterReadings.reading(second) {
                        await ctx.server.notifyWhenReady(live, value: encoded(PLXContinuousMeasurement(normal: reading)))
                    }
                    if second % 60 == 0 { store.append(next.withLock { $0.next(taken: nowDateTime()) }) }
                }
                log.cancel()
            },
            onEvent: { event, ctx in store.handle(event, on: ctx.server) })
    }
}

/// Says each answered request and each deletion of a record store (glucose, plx).
func logRecordEvents(_ store: StoredRecords, _ name: String, _ ctx: ProfileContext) async {
    for await e in store.log {
        switch e {
        case .answered(let c, let sent, let answer):
            var what = RecordAccessControlPoint.summary(of: answer)
            if sent > 0 { what = "\(sent) record\(sent == 1 ? "" : "s"), then \(what)" }
            ctx.out.note("\(name) records for \(c.peer): \(what)")
        case .deleted(let c, let gone):
            ctx.out.note("deleted \(gone.count) stored \(name) record\(gone.count == 1 ? "" : "s") for \(c.peer)")
        }
    }
}

/// The readings `serve --profile plx` makes up: SpO2 95 to 99 %, pulse 60 to 80 bpm.
struct PulseOximeterReadings: Sendable {
    static let service = BluetoothUUID(0x1822)
    static let spotCheck = BluetoothUUID(0x2A5E), continuous = BluetoothUUID(0x2A5F)
    /// The store's own numbering (PLX records carry none on the air).
    var number: UInt16 = 1

    /// The reading at step `n`.
    static func reading(_ n: Int) -> SpO2PulseRate? {
        guard let spo2 = try? SFloat(mantissa: 95 + n * 7 % 5, exponent: 0),
              let pulse = try? SFloat(mantissa: 60 + n * 13 % 21, exponent: 0) else { return nil }
        return SpO2PulseRate(spo2: spo2, pulseRate: pulse)
    }

    /// The next spot-check, taken at `time`.
    mutating func next(taken time: DateTime) -> StoredRecords.Record {
        let n = number
        number &+= 1
        var values: [StoredRecords.Value] = []
        if let r = Self.reading(Int(n)) {
            values.append(StoredRecords.Value(Self.spotCheck, encoded(PLXSpotCheckMeasurement(reading: r, timestamp: time))))
        }
        return StoredRecords.Record(sequenceNumber: n, values: values)
    }
}
